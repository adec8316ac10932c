package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRules;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The claim state machine, one key at a time: the first claim, a duplicate while the lease
 * is live, replays of a stored outcome or terminal failure, the retry after a retryable failure or
 * a release, takeover at the lease's exact end, extending leases (one and many at once), writes
 * refused once a record is finished or unknown, tenants apart, and keys and outcomes kept exactly.
 */
abstract class StateMachineTester extends ConformanceTester {

  StateMachineTester(StoreConformanceSuite suite) {
    super(suite);
  }

  @Test
  void firstClaimAcquiresTokenOne() {
    IdempotencyKey key = newKey();
    Instant now = clock.instant();

    Claim.Acquired acquired = acquire(key);

    assertThat(acquired.token()).isEqualTo(ClaimRules.firstToken(now));
    assertThat(acquired.takeover()).isFalse();
    assertThat(acquired.attempt()).isEqualTo(1);
    assertThat(acquired.checkpoint()).isNull();
    assertThat(acquired.leaseUntil()).isEqualTo(now.plus(LEASE));
    IdempotencyRecord r = record(key);
    assertThat(r.key()).isEqualTo(key);
    assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(r.fingerprint()).isEqualTo(FP);
    assertThat(r.token()).isEqualTo(acquired.token());
    assertThat(r.attempts()).isEqualTo(1);
    assertThat(r.leaseUntil()).isEqualTo(now.plus(LEASE));
    assertThat(r.createdAt()).isEqualTo(now);
    assertThat(r.expiresAt()).isEqualTo(now.plus(RETENTION));
    assertThat(r.outcome()).isNull();
  }

  @Test
  void unknownKeyIsNotFound() {
    assertThat(store.find(newKey())).isEmpty();
  }

  @Test
  void duplicateWhileLeaseIsLiveIsInProgress() {
    IdempotencyKey key = newKey();
    Claim.Acquired acquired = acquire(key);
    clock.advance(LEASE.minus(NANO));

    Claim claim = claim(key);

    assertThat(claim).isEqualTo(new Claim.InProgress(acquired.leaseUntil()));
    assertThat(record(key).token()).isEqualTo(acquired.token());
  }

  @Test
  void completedKeyIsReplayed() {
    IdempotencyKey key = newKey();
    Instant created = clock.instant();
    long token = acquire(key).token();
    clock.advance(Duration.ofSeconds(1));
    Instant completedAt = clock.instant();

    complete(key, token, text("charged"));
    clock.advance(Duration.ofHours(1));
    Claim claim = claim(key);

    assertThat(claim).isEqualTo(new Claim.Replay(text("charged"), token));
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.COMPLETED);
    assertThat(r.outcome()).isEqualTo(text("charged"));
    assertThat(r.createdAt()).isEqualTo(created);
    assertThat(r.updatedAt()).isEqualTo(completedAt);
    assertThat(r.expiresAt()).isEqualTo(completedAt.plus(RETENTION));
  }

  @Test
  void terminalFailureIsStoredAndReplayed() {
    IdempotencyKey key = newKey();
    long token = acquire(key).token();
    Outcome failure = Outcome.failure("com.example.InsufficientFunds", "balance 3 < 10");

    complete(key, token, failure);
    Claim claim = claim(key);

    assertThat(claim).isInstanceOf(Claim.Replay.class);
    Outcome replayed = ((Claim.Replay) claim).outcome();
    assertThat(replayed.kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(replayed.failureType()).isEqualTo("com.example.InsufficientFunds");
    assertThat(replayed.failureMessage()).isEqualTo("balance 3 < 10");
  }

  @Test
  void retryableFailureKeepsTheRecordAndTheNextClaimRetries() {
    IdempotencyKey key = newKey();
    long token = acquire(key).token();

    store.fail(key, token, "gateway timeout", clock.instant(), RETENTION);
    IdempotencyRecord failed = record(key);
    Claim.Acquired retry = acquire(key);

    assertThat(failed.status()).isEqualTo(Status.FAILED);
    assertThat(failed.token()).isEqualTo(token);
    assertThat(failed.lastError()).isEqualTo("gateway timeout");
    assertThat(failed.outcome()).isNull();
    assertThat(retry.token()).isEqualTo(token + 1);
    assertThat(retry.attempt()).isEqualTo(2);
    assertThat(retry.takeover()).isFalse();
    assertThat(record(key).status()).isEqualTo(Status.IN_PROGRESS);
  }

  @Test
  void aReleasedClaimIsRetakenAtOnceWithoutCountingAnAttempt() {
    IdempotencyKey key = newKey();
    Claim.Acquired first = acquire(key);

    store.release(key, first.token(), "released unprocessed: the consumer stopped",
        clock.instant(), RETENTION);
    IdempotencyRecord released = record(key);
    // The same release re-sent after it was applied is acknowledged and changes nothing.
    store.release(key, first.token(), "released unprocessed: the consumer stopped",
        clock.instant(), RETENTION);
    assertThat(record(key)).isEqualTo(released);
    Claim.Acquired again = acquire(key);
    store.fail(key, again.token(), "gateway timeout", clock.instant(), RETENTION);
    Claim.Acquired retry = acquire(key);

    assertThat(released.status()).isEqualTo(Status.FAILED);
    assertThat(released.token()).isEqualTo(first.token());
    assertThat(released.lastError()).isEqualTo("released unprocessed: the consumer stopped");
    assertThat(again.token()).isEqualTo(first.token() + 1);
    assertThat(again.attempt()).as("a release does not count").isEqualTo(1);
    assertThat(retry.attempt()).as("a failure counts").isEqualTo(2);
    assertThatThrownBy(() -> store.release(key, first.token(), "late", clock.instant(),
        RETENTION)).isInstanceOf(LeaseLostException.class);
  }

  @Test
  void expiredLeaseIsTakenOverAtTheExactBoundary() {
    IdempotencyKey key = newKey();
    Claim.Acquired first = acquire(key);
    clock.set(first.leaseUntil());

    Claim.Acquired takeover = acquire(key);

    assertThat(takeover.token()).isEqualTo(first.token() + 1);
    assertThat(takeover.takeover()).isTrue();
    assertThat(takeover.attempt()).isEqualTo(2);
    assertThat(takeover.leaseUntil()).isEqualTo(clock.instant().plus(LEASE));
    assertThat(record(key).token()).isEqualTo(first.token() + 1);
  }

  @Test
  void extendedLeaseKeepsTheClaim() {
    IdempotencyKey key = newKey();
    Claim.Acquired first = acquire(key);
    clock.advance(LEASE.dividedBy(2));

    Instant extended = store.extend(key, first.token(), clock.instant(), LEASE);
    clock.set(first.leaseUntil().plusSeconds(1));
    Claim claim = claim(key);

    assertThat(extended).isEqualTo(first.leaseUntil().plus(LEASE.dividedBy(2)));
    assertThat(claim).isEqualTo(new Claim.InProgress(extended));
    assertThat(record(key).leaseUntil()).isEqualTo(extended);
  }

  @Test
  void extendAllExtendsTheHeldLeasesAndNamesTheLostOnes() {
    IdempotencyKey held = newKey();
    IdempotencyKey alsoHeld = newKey();
    IdempotencyKey completed = newKey();
    IdempotencyKey takenOver = newKey();
    Claim.Acquired a = acquire(held);
    Claim.Acquired b = acquire(alsoHeld);
    Claim.Acquired c = acquire(completed);
    Claim.Acquired d = acquire(takenOver);
    complete(completed, c.token(), text("done"));
    clock.set(d.leaseUntil());
    acquire(takenOver); // the lease passed: another worker took it over
    List<HeldClaim> beat = List.of(new HeldClaim(held, a.token()),
        new HeldClaim(completed, c.token()), new HeldClaim(takenOver, d.token()),
        new HeldClaim(alsoHeld, b.token()));
    Instant now = clock.instant();

    Set<IdempotencyKey> lost = store.extendAll(beat, now, LEASE);
    // The same beat re-sent (its answer lost) is not a lost lease.
    Set<IdempotencyKey> again = store.extendAll(beat, now, LEASE);

    assertThat(lost).containsExactly(completed, takenOver);
    assertThat(again).containsExactly(completed, takenOver);
    assertThat(record(held).leaseUntil()).isEqualTo(now.plus(LEASE));
    assertThat(record(alsoHeld).leaseUntil()).isEqualTo(now.plus(LEASE));
    assertThat(record(completed).status()).isEqualTo(Status.COMPLETED);
    assertThat(store.extendAll(List.of(), now, LEASE)).isEmpty();
  }

  @Test
  void lateCompletionSucceedsWhenNobodyTookOver() {
    IdempotencyKey key = newKey();
    Claim.Acquired first = acquire(key);
    clock.set(first.leaseUntil().plusSeconds(5));

    complete(key, first.token(), text("late but sole owner"));

    assertThat(claim(key)).isEqualTo(new Claim.Replay(text("late but sole owner"), first.token()));
  }

  @Test
  void finishedRecordsRefuseFurtherWrites() {
    IdempotencyKey key = newKey();
    long token = acquire(key).token();
    complete(key, token, text("done"));
    IdempotencyRecord done = record(key);

    assertThatThrownBy(() -> complete(key, token, text("again")))
        .isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> store.fail(key, token, "x", clock.instant(), RETENTION))
        .isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> store.extend(key, token, clock.instant(), LEASE))
        .isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> store.checkpoint(key, token, Checkpoint.of("c", new byte[1]),
        clock.instant())).isInstanceOf(LeaseLostException.class);
    assertThat(record(key)).isEqualTo(done);
  }

  @Test
  void writesToAnUnknownKeyAreRefused() {
    IdempotencyKey key = newKey();

    assertThatThrownBy(() -> complete(key, 1, text("x"))).isInstanceOf(LeaseLostException.class);
    assertThatThrownBy(() -> store.fail(key, 1, "x", clock.instant(), RETENTION))
        .isInstanceOf(LeaseLostException.class);
    assertThat(store.find(key)).isEmpty();
  }

  @Test
  void tenantsNeverShareARecord() {
    IdempotencyKey a = IdempotencyKey.of(scope, "tenant-a", "order-1");
    IdempotencyKey b = IdempotencyKey.of(scope, "tenant-b", "order-1");
    long tokenA = acquire(a).token();
    complete(a, tokenA, text("a"));

    Claim claimB = store.claim(request(b, OTHER_FP));

    assertThat(claimB).isInstanceOf(Claim.Acquired.class);
    assertThat(((Claim.Acquired) claimB).attempt()).isEqualTo(1);
    assertThat(claim(a)).isEqualTo(new Claim.Replay(text("a"), tokenA));
  }

  @Test
  void keysKeepEveryPrintableCharacter() {
    IdempotencyKey key = IdempotencyKey.of(scope, "t'\"%_\\;--", " a key with 'quotes', %_ and \\ ");
    complete(key, acquire(key).token(), text("ok"));

    assertThat(claim(key)).isInstanceOf(Claim.Replay.class);
    assertThat(record(key).key()).isEqualTo(key);
    assertThat(store.find(IdempotencyKey.of(scope, "t'\"%_\\;--", "a key with 'quotes', %_ and \\")))
        .isEmpty();
  }

  @Test
  void binaryOutcomesRoundTripExactly() {
    IdempotencyKey key = newKey();
    byte[] body = new byte[64 * 1024];
    new Random(7).nextBytes(body);
    body[0] = 0;
    Outcome outcome = Outcome.success("application/octet-stream", body);

    complete(key, acquire(key).token(), outcome);

    assertThat(((Claim.Replay) claim(key)).outcome()).isEqualTo(outcome);
    Outcome empty = Outcome.success("application/vnd.once.void", new byte[0]);
    IdempotencyKey other = newKey();
    complete(other, acquire(other).token(), empty);
    assertThat(((Claim.Replay) claim(other)).outcome()).isEqualTo(empty);
  }
}
