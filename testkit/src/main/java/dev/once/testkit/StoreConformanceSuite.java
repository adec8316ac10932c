package dev.once.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.once.Checkpoint;
import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.PayloadTooLargeException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The one conformance suite every {@link IdempotencyStore} passes. Extend it, return a store over a
 * real server from {@link #newStore()}, and run it:
 *
 * <pre>{@code
 * class PostgresStoreConformanceTest extends StoreConformanceSuite {
 *   protected IdempotencyStore newStore() { return JdbcStore.builder(dataSource).build(); }
 * }
 * }</pre>
 *
 * Each test works in a scope of its own, so stores may share one database between tests. Time is
 * a {@link ManualClock}: nothing sleeps.
 */
public abstract class StoreConformanceSuite {

  /** The lease every test claims with. */
  protected static final Duration LEASE = Duration.ofSeconds(30);
  /** The retention every test claims with. */
  protected static final Duration RETENTION = Duration.ofHours(24);
  /** Threads racing on one key in the race tests. */
  protected static final int RACERS = 16;

  private static final Fingerprint FP = Fingerprint.of("request-A");
  private static final Fingerprint OTHER_FP = Fingerprint.of("request-B");
  private static final Duration NANO = Duration.ofNanos(1);

  /** The store under test, fresh from {@link #newStore()} for each test. */
  protected IdempotencyStore store;
  /** The test's clock; stores see time only through it. */
  protected ManualClock clock;
  private String scope;
  private final AtomicInteger keys = new AtomicInteger();

  /** A store over the real server. Called before each test; closed after it. */
  protected abstract IdempotencyStore newStore();

  /**
   * Makes every claim of {@code key} fail inside the real store (a value of the wrong type at the
   * key, a trigger that raises for it, a broken shard), so that a batch claim fails part-way; true
   * if the store can. {@link #heal} undoes it. The partial-batch tests are skipped for a store that
   * cannot inject such a fault (the default).
   */
  protected boolean poison(IdempotencyKey key) {
    return false;
  }

  /** Undoes {@link #poison}: claims of {@code key} work again. */
  protected void heal(IdempotencyKey key) {}

  /**
   * A second client of the same records, as another process (or this one restarted) would open:
   * by default a new {@link #newStore()}. A store whose instances do not share records (in
   * memory) returns {@link #store}. Closed by the test.
   */
  protected IdempotencyStore anotherClient() {
    return newStore();
  }

  @BeforeEach
  void openStore() {
    store = newStore();
    // A start that differs per test, past anything earlier tests left, in a scope of its own.
    clock = new ManualClock(ManualClock.DEFAULT_START.plusSeconds(
        System.currentTimeMillis() / 1000 % 1_000_000));
    scope = "conformance." + UUID.randomUUID().toString().substring(0, 8);
  }

  @AfterEach
  void closeStore() {
    if (store != null) {
      store.close();
    }
  }

  /** A key no other test uses. */
  protected IdempotencyKey newKey() {
    return IdempotencyKey.of(scope, "key-" + keys.incrementAndGet());
  }

  /** A claim request at the clock's time with the suite's lease and retention. */
  protected ClaimRequest request(IdempotencyKey key, Fingerprint fingerprint) {
    return new ClaimRequest(key, fingerprint, clock.instant(), LEASE, RETENTION);
  }

  private Claim claim(IdempotencyKey key) {
    return store.claim(request(key, FP));
  }

  private Claim.Acquired acquire(IdempotencyKey key) {
    Claim claim = claim(key);
    assertThat(claim).isInstanceOf(Claim.Acquired.class);
    return (Claim.Acquired) claim;
  }

  private IdempotencyRecord record(IdempotencyKey key) {
    Optional<IdempotencyRecord> found = store.find(key);
    assertThat(found).as("record of %s", key).isPresent();
    return found.get();
  }

  private static Outcome text(String body) {
    return Outcome.success("text/plain", body.getBytes(StandardCharsets.UTF_8));
  }

  private void complete(IdempotencyKey key, long token, Outcome outcome) {
    store.complete(key, token, outcome, clock.instant(), RETENTION);
  }

  private Once once(Once.Builder builder) {
    return builder.clock(clock).lease(LEASE).retention(RETENTION).build();
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("state machine")
  class StateMachine {

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

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("fencing")
  class Fencing {

    @Test
    void zombieAfterTakeoverChangesNothing() {
      IdempotencyKey key = newKey();
      Claim.Acquired zombie = acquire(key);
      store.checkpoint(key, zombie.token(), Checkpoint.of("step-1", new byte[] {1}), clock.instant());
      clock.set(zombie.leaseUntil());
      Claim.Acquired successor = acquire(key);
      IdempotencyRecord before = record(key);

      long stale = zombie.token();
      assertThatThrownBy(() -> complete(key, stale, text("zombie")))
          .isInstanceOf(LeaseLostException.class)
          .satisfies(e -> assertThat(((LeaseLostException) e).token()).isEqualTo(stale));
      assertThatThrownBy(() -> store.fail(key, stale, "zombie", clock.instant(), RETENTION))
          .isInstanceOf(LeaseLostException.class);
      assertThatThrownBy(() -> store.checkpoint(key, stale, Checkpoint.of("zombie", new byte[2]),
          clock.instant())).isInstanceOf(LeaseLostException.class);
      assertThatThrownBy(() -> store.extend(key, stale, clock.instant(), LEASE))
          .isInstanceOf(LeaseLostException.class);

      assertThat(record(key)).isEqualTo(before);
      complete(key, successor.token(), text("successor"));
      assertThat(claim(key)).isEqualTo(new Claim.Replay(text("successor"), successor.token()));
    }

    @Test
    void zombieAfterRetryChangesNothing() {
      IdempotencyKey key = newKey();
      Claim.Acquired first = acquire(key);
      store.fail(key, first.token(), "timeout", clock.instant(), RETENTION);
      Claim.Acquired retry = acquire(key);

      assertThatThrownBy(() -> complete(key, first.token(), text("zombie")))
          .isInstanceOf(LeaseLostException.class);

      assertThat(record(key).token()).isEqualTo(retry.token());
      assertThat(record(key).status()).isEqualTo(Status.IN_PROGRESS);
    }

    @Test
    void tokenNeverRepeatsAcrossRetriesTakeoversAndExpiry() {
      IdempotencyKey key = newKey();
      List<Long> tokens = new ArrayList<>();
      Claim.Acquired a = acquire(key);
      tokens.add(a.token());
      store.fail(key, a.token(), "retry", clock.instant(), RETENTION);
      Claim.Acquired b = acquire(key);
      tokens.add(b.token());
      clock.set(b.leaseUntil());
      Claim.Acquired c = acquire(key);
      tokens.add(c.token());
      complete(key, c.token(), text("done"));
      clock.advance(RETENTION);
      Claim.Acquired d = acquire(key);
      tokens.add(d.token());

      long t = tokens.get(0);
      assertThat(tokens).containsExactly(t, t + 1, t + 2, t + 3);
      assertThat(d.takeover()).isFalse();
      assertThat(d.attempt()).isEqualTo(1);
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("fingerprint mismatch")
  class Mismatch {

    private void assertMismatchLeavesRecordAlone(IdempotencyKey key) {
      IdempotencyRecord before = record(key);
      assertThat(store.claim(request(key, OTHER_FP))).isEqualTo(new Claim.Mismatch());
      assertThat(record(key)).isEqualTo(before);
    }

    @Test
    void whileInProgress() {
      IdempotencyKey key = newKey();
      acquire(key);
      assertMismatchLeavesRecordAlone(key);
    }

    @Test
    void afterTheLeasePassed() {
      IdempotencyKey key = newKey();
      clock.set(acquire(key).leaseUntil());
      assertMismatchLeavesRecordAlone(key);
    }

    @Test
    void afterCompletion() {
      IdempotencyKey key = newKey();
      complete(key, acquire(key).token(), text("done"));
      assertMismatchLeavesRecordAlone(key);
    }

    @Test
    void afterTerminalFailure() {
      IdempotencyKey key = newKey();
      complete(key, acquire(key).token(), Outcome.failure("E", "m"));
      assertMismatchLeavesRecordAlone(key);
    }

    @Test
    void afterRetryableFailure() {
      IdempotencyKey key = newKey();
      store.fail(key, acquire(key).token(), "x", clock.instant(), RETENTION);
      assertMismatchLeavesRecordAlone(key);
    }

    @Test
    void notAfterRetentionWhenTheKeyBehavesAsNew() {
      IdempotencyKey key = newKey();
      complete(key, acquire(key).token(), text("done"));
      clock.advance(RETENTION);

      Claim claim = store.claim(request(key, OTHER_FP));

      assertThat(claim).isInstanceOf(Claim.Acquired.class);
      assertThat(record(key).fingerprint()).isEqualTo(OTHER_FP);
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("retention and maintenance")
  class Retention {

    @Test
    void replayedUntilTheInstantBeforeRetentionEnds() {
      IdempotencyKey key = newKey();
      complete(key, acquire(key).token(), text("done"));
      Instant expiresAt = record(key).expiresAt();

      clock.set(expiresAt.minus(NANO));
      assertThat(claim(key)).isInstanceOf(Claim.Replay.class);
    }

    @Test
    void behavesAsNewAtTheExactRetentionBoundary() {
      IdempotencyKey key = newKey();
      Claim.Acquired first = acquire(key);
      store.checkpoint(key, first.token(), Checkpoint.of("old", new byte[] {9}), clock.instant());
      complete(key, first.token(), text("done"));
      clock.set(record(key).expiresAt());

      Claim.Acquired fresh = acquire(key);

      assertThat(fresh.token()).isEqualTo(first.token() + 1);
      assertThat(fresh.attempt()).isEqualTo(1);
      assertThat(fresh.takeover()).isFalse();
      assertThat(fresh.checkpoint()).isNull();
      IdempotencyRecord r = record(key);
      assertThat(r.outcome()).isNull();
      assertThat(r.checkpoint()).isNull();
      assertThat(r.createdAt()).isEqualTo(clock.instant());
    }

    @Test
    void purgeDeletesExpiredRecordsOnlyInBoundedBatches() {
      List<IdempotencyKey> expired = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        IdempotencyKey key = newKey();
        complete(key, acquire(key).token(), text("old " + i));
        expired.add(key);
      }
      clock.advance(Duration.ofHours(1));
      IdempotencyKey live = newKey();
      complete(live, acquire(live).token(), text("new"));
      IdempotencyKey running = newKey();
      acquire(running);
      clock.advance(RETENTION.minus(Duration.ofMinutes(30)));

      int firstBatch = store.purgeExpired(clock.instant(), 2);
      int rest = 0;
      int n;
      while ((n = store.purgeExpired(clock.instant(), 1000)) > 0) {
        rest += n;
      }

      assertThat(firstBatch).isEqualTo(2);
      assertThat(firstBatch + rest).isGreaterThanOrEqualTo(5);
      for (IdempotencyKey key : expired) {
        assertThat(store.find(key)).as("purged %s", key).isEmpty();
      }
      assertThat(store.find(live)).isPresent();
      assertThat(store.find(running)).isPresent();
      assertThat(store.purgeExpired(clock.instant(), 1000)).isZero();
    }

    @Test
    void purgeNeverDeletesALiveLeaseEvenPastRetention() {
      IdempotencyKey key = newKey();
      Duration shortRetention = Duration.ofSeconds(10);
      Claim claim = store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE, shortRetention));
      clock.advance(Duration.ofSeconds(20));

      while (store.purgeExpired(clock.instant(), 1000) > 0) {
        // drain
      }

      assertThat(claim).isInstanceOf(Claim.Acquired.class);
      assertThat(store.find(key)).isPresent();
      assertThat(claim(key)).isInstanceOf(Claim.InProgress.class);
    }

    @Test
    void reapTurnsExpiredLeasesIntoFailuresAndFencesTheirWorkers() {
      IdempotencyKey stale = newKey();
      Claim.Acquired zombie = acquire(stale);
      clock.advance(Duration.ofSeconds(20));
      IdempotencyKey live = newKey();
      acquire(live);
      clock.set(zombie.leaseUntil());

      int reaped = 0;
      int n;
      while ((n = store.reapExpiredLeases(clock.instant(), 1000)) > 0) {
        reaped += n;
      }

      assertThat(reaped).isGreaterThanOrEqualTo(1);
      IdempotencyRecord r = record(stale);
      assertThat(r.status()).isEqualTo(Status.FAILED);
      assertThat(r.token()).isEqualTo(zombie.token());
      assertThat(r.lastError()).isEqualTo("lease expired");
      assertThat(record(live).status()).isEqualTo(Status.IN_PROGRESS);
      assertThatThrownBy(() -> complete(stale, zombie.token(), text("zombie")))
          .isInstanceOf(LeaseLostException.class);
      assertThat(acquire(stale).token()).isEqualTo(zombie.token() + 1);
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("checkpoints")
  class Checkpoints {

    @Test
    void survivesTakeover() {
      IdempotencyKey key = newKey();
      Claim.Acquired first = acquire(key);
      store.checkpoint(key, first.token(), Checkpoint.of("debited", new byte[] {1, 2}),
          clock.instant());
      store.checkpoint(key, first.token(), Checkpoint.of("shipped", new byte[] {3}),
          clock.instant());
      clock.set(first.leaseUntil());

      Claim.Acquired takeover = acquire(key);

      assertThat(takeover.checkpoint()).isEqualTo(Checkpoint.of("shipped", new byte[] {3}));
      assertThat(record(key).checkpoint()).isEqualTo(Checkpoint.of("shipped", new byte[] {3}));
    }

    @Test
    void survivesRetryableFailure() {
      IdempotencyKey key = newKey();
      Claim.Acquired first = acquire(key);
      store.checkpoint(key, first.token(), Checkpoint.of("debited", new byte[0]), clock.instant());
      store.fail(key, first.token(), "timeout", clock.instant(), RETENTION);

      assertThat(acquire(key).checkpoint()).isEqualTo(Checkpoint.of("debited", new byte[0]));
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("batch claim")
  class Batch {

    @Test
    void answersEveryOutcomeInRequestOrder() {
      IdempotencyKey completed = newKey();
      long completedToken = acquire(completed).token();
      complete(completed, completedToken, text("done"));
      IdempotencyKey running = newKey();
      Claim.Acquired runningClaim = acquire(running);
      IdempotencyKey failed = newKey();
      long failedToken = acquire(failed).token();
      store.fail(failed, failedToken, "x", clock.instant(), RETENTION);
      IdempotencyKey reused = newKey();
      acquire(reused);
      IdempotencyKey fresh = newKey();

      List<Claim> claims = store.claimAll(List.of(
          request(fresh, FP), request(completed, FP), request(running, FP),
          request(reused, OTHER_FP), request(failed, FP), request(fresh, FP)));

      assertThat(claims).hasSize(6);
      assertThat(claims.get(0)).isInstanceOf(Claim.Acquired.class);
      long freshToken = ((Claim.Acquired) claims.get(0)).token();
      assertThat(freshToken).isEqualTo(ClaimRules.firstToken(clock.instant()));
      assertThat(claims.get(1)).isEqualTo(new Claim.Replay(text("done"), completedToken));
      assertThat(claims.get(2)).isEqualTo(new Claim.InProgress(runningClaim.leaseUntil()));
      assertThat(claims.get(3)).isEqualTo(new Claim.Mismatch());
      assertThat(claims.get(4)).isInstanceOf(Claim.Acquired.class);
      assertThat(((Claim.Acquired) claims.get(4)).token()).isEqualTo(failedToken + 1);
      assertThat(claims.get(5)).as("second request for a key in the same batch")
          .isInstanceOf(Claim.InProgress.class);
      assertThat(record(fresh).token()).isEqualTo(freshToken);
    }

    @Test
    void emptyBatchClaimsNothing() {
      assertThat(store.claimAll(List.of())).isEmpty();
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("batch completion")
  class BatchCompletion {

    private Set<IdempotencyKey> completeAll(Completion... completions) {
      return store.completeAll(List.of(completions), clock.instant(), RETENTION);
    }

    @Test
    void storesEveryOutcomeAsCompleteDoes() {
      IdempotencyKey plain = newKey();
      IdempotencyKey withCheckpoint = newKey();
      IdempotencyKey failed = newKey();
      List<Claim> claims = store.claimAll(List.of(request(plain, FP), request(withCheckpoint, FP),
          request(failed, FP)));
      long[] tokens = claims.stream().mapToLong(c -> ((Claim.Acquired) c).token()).toArray();
      Checkpoint step = Checkpoint.of("debited", new byte[] {7});
      store.checkpoint(withCheckpoint, tokens[1], step, clock.instant());
      IdempotencyRecord before = record(withCheckpoint);
      clock.advance(Duration.ofSeconds(3));
      byte[] binary = {0, (byte) 0xff, '\'', '\\', 0};
      Outcome failure = Outcome.failure("com.example.Declined", "card declined");

      Set<IdempotencyKey> lost = completeAll(
          new Completion(plain, tokens[0], text("one")),
          new Completion(withCheckpoint, tokens[1], Outcome.success("application/octet-stream",
              binary)),
          new Completion(failed, tokens[2], failure));

      assertThat(lost).isEmpty();
      assertThat(claim(plain)).isEqualTo(new Claim.Replay(text("one"), tokens[0]));
      assertThat(claim(withCheckpoint)).isEqualTo(new Claim.Replay(
          Outcome.success("application/octet-stream", binary), tokens[1]));
      assertThat(claim(failed)).isEqualTo(new Claim.Replay(failure, tokens[2]));
      IdempotencyRecord after = record(withCheckpoint);
      assertThat(after.status()).isEqualTo(Status.COMPLETED);
      assertThat(after.token()).isEqualTo(before.token());
      assertThat(after.checkpoint()).isEqualTo(step);
      assertThat(after.attempts()).isEqualTo(before.attempts());
      assertThat(after.leaseUntil()).isEqualTo(before.leaseUntil());
      assertThat(after.createdAt()).isEqualTo(before.createdAt());
      assertThat(after.updatedAt()).isEqualTo(clock.instant());
      assertThat(after.expiresAt()).isEqualTo(clock.instant().plus(RETENTION));
    }

    @Test
    void reportsOnlyTheCompletionsWhoseLeaseWasLostAndStoresTheRest() {
      IdempotencyKey first = newKey();
      long firstToken = acquire(first).token();
      IdempotencyKey takenOver = newKey();
      Claim.Acquired zombie = acquire(takenOver);
      IdempotencyKey retried = newKey();
      long retriedToken = acquire(retried).token();
      store.fail(retried, retriedToken, "timeout", clock.instant(), RETENTION);
      IdempotencyKey finished = newKey();
      long finishedToken = acquire(finished).token();
      complete(finished, finishedToken, text("earlier"));
      IdempotencyKey unknown = newKey();
      clock.set(zombie.leaseUntil());
      Claim.Acquired successor = acquire(takenOver);
      IdempotencyKey last = newKey();
      long lastToken = acquire(last).token();
      IdempotencyRecord takenOverBefore = record(takenOver);
      IdempotencyRecord retriedBefore = record(retried);
      IdempotencyRecord finishedBefore = record(finished);

      Set<IdempotencyKey> lost = completeAll(
          new Completion(first, firstToken, text("first")),
          new Completion(takenOver, zombie.token(), text("zombie")),
          new Completion(retried, retriedToken, text("zombie")),
          new Completion(finished, finishedToken, text("again")),
          new Completion(unknown, 1, text("nobody")),
          new Completion(last, lastToken, text("last")));

      assertThat(lost).containsExactly(takenOver, retried, finished, unknown);
      assertThat(record(takenOver)).isEqualTo(takenOverBefore);
      assertThat(record(retried)).isEqualTo(retriedBefore);
      assertThat(record(finished)).isEqualTo(finishedBefore);
      assertThat(store.find(unknown)).isEmpty();
      assertThat(claim(first)).isEqualTo(new Claim.Replay(text("first"), firstToken));
      assertThat(claim(last)).isEqualTo(new Claim.Replay(text("last"), lastToken));
      assertThat(completeAll(new Completion(takenOver, successor.token(), text("successor"))))
          .isEmpty();
      assertThat(claim(takenOver)).isEqualTo(new Claim.Replay(text("successor"),
          successor.token()));
    }

    @Test
    void emptyBatchStoresNothing() {
      assertThat(completeAll()).isEmpty();
    }

    @Test
    void twoCompletionsForOneKeyAreRefusedBeforeAnythingIsStored() {
      IdempotencyKey other = newKey();
      long otherToken = acquire(other).token();
      IdempotencyKey key = newKey();
      long token = acquire(key).token();

      assertThatThrownBy(() -> completeAll(new Completion(other, otherToken, text("other")),
          new Completion(key, token, text("a")), new Completion(key, token, text("b"))))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(key.toString());

      assertThat(record(other).status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(record(key).status()).isEqualTo(Status.IN_PROGRESS);
    }

    @Test
    void anOversizedOutcomeRefusesTheWholeBatchBeforeAnythingIsStored() {
      int limit = store.maxPayloadBytes();
      assumeTrue(limit <= 64 << 20, "the store's payload limit is too large to exceed here");
      IdempotencyKey small = newKey();
      long smallToken = acquire(small).token();
      IdempotencyKey large = newKey();
      long largeToken = acquire(large).token();

      assertThatThrownBy(() -> completeAll(new Completion(small, smallToken, text("fits")),
          new Completion(large, largeToken, Outcome.success("application/octet-stream",
              new byte[limit + 1]))))
          .isInstanceOf(PayloadTooLargeException.class);

      assertThat(record(small).status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(record(large).status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(completeAll(new Completion(small, smallToken, text("fits")))).isEmpty();
    }

    @Test
    void racingBatchesOfOneTokenStoreExactlyOneOutcomePerKey() throws Exception {
      List<IdempotencyKey> keys = new ArrayList<>();
      List<ClaimRequest> requests = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        keys.add(newKey());
        requests.add(request(keys.get(i), FP));
      }
      List<Claim> claims = store.claimAll(requests);
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Set<IdempotencyKey>>> racers = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
          String writer = "writer-" + w;
          racers.add(pool.submit(() -> {
            List<Completion> batch = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
              batch.add(new Completion(keys.get(i), ((Claim.Acquired) claims.get(i)).token(),
                  text(writer)));
            }
            go.await();
            return store.completeAll(batch, clock.instant(), RETENTION);
          }));
        }
        go.countDown();
        int[] wins = new int[keys.size()];
        for (Future<Set<IdempotencyKey>> racer : racers) {
          Set<IdempotencyKey> lost = racer.get(60, TimeUnit.SECONDS);
          for (int i = 0; i < keys.size(); i++) {
            if (!lost.contains(keys.get(i))) {
              wins[i]++;
            }
          }
        }
        for (int i = 0; i < keys.size(); i++) {
          assertThat(wins[i]).as("writers that stored %s", keys.get(i)).isEqualTo(1);
          assertThat(record(keys.get(i)).status()).isEqualTo(Status.COMPLETED);
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("races between real threads")
  class Races {

    private <T> List<T> race(int threads, Callable<T> task) throws Exception {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<T>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          futures.add(pool.submit(() -> {
            ready.countDown();
            go.await();
            return task.call();
          }));
        }
        ready.await();
        go.countDown();
        List<T> results = new ArrayList<>();
        for (Future<T> f : futures) {
          results.add(f.get(60, TimeUnit.SECONDS));
        }
        return results;
      } finally {
        pool.shutdownNow();
      }
    }

    @Test
    void exactlyOneOfManyClaimsOnANewKeyIsAcquired() throws Exception {
      for (int round = 0; round < 10; round++) {
        IdempotencyKey key = newKey();
        List<Claim> claims = race(RACERS, () -> claim(key));

        assertThat(claims).filteredOn(c -> c instanceof Claim.Acquired).hasSize(1);
        assertThat(claims).filteredOn(c -> c instanceof Claim.InProgress).hasSize(RACERS - 1);
        long winner = claims.stream().filter(c -> c instanceof Claim.Acquired)
            .mapToLong(c -> ((Claim.Acquired) c).token()).findFirst().orElseThrow();
        assertThat(record(key).token()).isEqualTo(winner);
      }
    }

    @Test
    void exactlyOneOfManyClaimsTakesAnExpiredLeaseOver() throws Exception {
      for (int round = 0; round < 5; round++) {
        IdempotencyKey key = newKey();
        Instant start = clock.instant();
        Claim.Acquired first = acquire(key);
        clock.set(first.leaseUntil());
        List<Claim> claims = race(RACERS, () -> claim(key));

        assertThat(claims).filteredOn(c -> c instanceof Claim.Acquired).hasSize(1)
            .allSatisfy(c -> assertThat(((Claim.Acquired) c).token()).isEqualTo(first.token() + 1));
        assertThat(claims).filteredOn(c -> c instanceof Claim.InProgress).hasSize(RACERS - 1);
        assertThat(record(key).token()).isEqualTo(first.token() + 1);
        clock.set(start);
      }
    }

    @Test
    void claimsAfterCompletionAllReplay() throws Exception {
      IdempotencyKey key = newKey();
      long token = acquire(key).token();
      complete(key, token, text("done"));

      List<Claim> claims = race(RACERS, () -> claim(key));

      assertThat(claims).allSatisfy(c -> assertThat(c).isEqualTo(new Claim.Replay(text("done"), token)));
    }

    @Test
    void onceRunsTheLogicExactlyOnceUnderARace() throws Exception {
      Once once = once(Once.builder(store));
      for (int round = 0; round < 5; round++) {
        IdempotencyKey key = newKey();
        AtomicInteger executions = new AtomicInteger();
        List<String> answers = race(RACERS, () -> {
          try {
            Result<String> r = once.call(key, FP, Codecs.utf8(), a -> {
              executions.incrementAndGet();
              return "charged";
            });
            return r.replayed() ? "replayed" : "ran";
          } catch (RequestInProgressException e) {
            return "in-progress";
          }
        });

        assertThat(executions).hasValue(1);
        assertThat(answers).containsOnlyOnce("ran");
        assertThat(claim(key)).isEqualTo(new Claim.Replay(
            Outcome.success(Codecs.utf8().mediaType(), "charged".getBytes(StandardCharsets.UTF_8)),
            record(key).token()));
      }
    }

    @Test
    void racingWritersOfOneTokenLeaveOneConsistentOutcome() throws Exception {
      IdempotencyKey key = newKey();
      long token = acquire(key).token();
      AtomicInteger n = new AtomicInteger();

      List<Boolean> won = race(RACERS, () -> {
        try {
          complete(key, token, text("writer-" + n.incrementAndGet()));
          return true;
        } catch (LeaseLostException e) {
          return false;
        }
      });

      assertThat(won).containsOnlyOnce(true);
      assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("re-sent commands")
  class Resent {

    @Test
    void aResentClaimFindsItsOwnClaimAndIsAcquiredWithItsToken() {
      IdempotencyKey key = newKey();
      ClaimRequest request = request(key, FP);
      Claim.Acquired first = (Claim.Acquired) store.claim(request);
      IdempotencyRecord afterFirst = record(key);

      Claim again = store.claim(request);

      assertThat(again).isInstanceOf(Claim.Acquired.class);
      assertThat(((Claim.Acquired) again).token()).isEqualTo(first.token());
      assertThat(((Claim.Acquired) again).leaseUntil()).isEqualTo(first.leaseUntil());
      assertThat(record(key)).isEqualTo(afterFirst);
      assertThat(afterFirst.claimId()).isEqualTo(request.claimId());
      // Anyone else's claim, at the same instant, still finds the key in progress.
      assertThat(store.claim(request(key, FP))).isEqualTo(new Claim.InProgress(first.leaseUntil()));
    }

    @Test
    void aResentTakeoverIsAcquiredWithTheTakeoversToken() {
      IdempotencyKey key = newKey();
      long first = acquire(key).token();
      clock.advance(LEASE);
      ClaimRequest takeover = request(key, FP);
      Claim.Acquired taken = (Claim.Acquired) store.claim(takeover);

      Claim again = store.claim(takeover);

      assertThat(taken.token()).isEqualTo(first + 1);
      assertThat(again).isInstanceOf(Claim.Acquired.class);
      assertThat(((Claim.Acquired) again).token()).isEqualTo(first + 1);
      assertThat(record(key).token()).isEqualTo(first + 1);
    }

    @Test
    void aResentClaimInABatchIsAcquiredWithItsTokens() {
      IdempotencyKey a = newKey();
      IdempotencyKey b = newKey();
      List<ClaimRequest> batch = List.of(request(a, FP), request(b, FP));
      List<Claim> first = store.claimAll(batch);

      List<Claim> again = store.claimAll(batch);

      assertThat(again).isEqualTo(first);
    }

    @Test
    void aRepeatedCompletionIsAcknowledgedAndChangesNothing() {
      IdempotencyKey key = newKey();
      long token = acquire(key).token();
      complete(key, token, text("done"));
      IdempotencyRecord done = record(key);
      clock.advance(Duration.ofSeconds(1));

      store.complete(key, token, text("done"), done.updatedAt(), RETENTION);

      assertThat(record(key)).isEqualTo(done);
      assertThatThrownBy(() -> complete(key, token, text("other")))
          .isInstanceOf(LeaseLostException.class);
      assertThat(store.completeAll(List.of(new Completion(key, token, text("done"))),
          done.updatedAt(), RETENTION)).isEmpty();
      assertThat(record(key)).isEqualTo(done);
    }

    @Test
    void aRepeatedFailureIsAcknowledgedAndChangesNothing() {
      IdempotencyKey key = newKey();
      long token = acquire(key).token();
      store.fail(key, token, "gateway timeout", clock.instant(), RETENTION);
      IdempotencyRecord failed = record(key);

      store.fail(key, token, "gateway timeout", clock.instant(), RETENTION);

      assertThat(record(key)).isEqualTo(failed);
      assertThatThrownBy(() -> store.fail(key, token, "other", clock.instant(), RETENTION))
          .isInstanceOf(LeaseLostException.class);
      assertThatThrownBy(() -> complete(key, token, text("late")))
          .isInstanceOf(LeaseLostException.class);
    }

    @Test
    void aZombiesRepeatedWritesAreStillFenced() {
      IdempotencyKey key = newKey();
      long zombie = acquire(key).token();
      complete(key, zombie, text("first"));
      // The key expires and is claimed anew: the old token's repeated completion must not count.
      clock.advance(RETENTION);
      long successor = acquire(key).token();

      assertThatThrownBy(() -> complete(key, zombie, text("first")))
          .isInstanceOf(LeaseLostException.class);
      assertThat(record(key).status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(record(key).token()).isEqualTo(successor);
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("a batch claim that fails part-way")
  class PartialBatch {

    private void failsAt(int bad, int size) {
      List<IdempotencyKey> keys = new ArrayList<>();
      for (int i = 0; i < size; i++) {
        keys.add(newKey());
      }
      assumeTrue(poison(keys.get(bad)), "the store cannot inject a claim fault");
      List<ClaimRequest> batch = new ArrayList<>();
      keys.forEach(k -> batch.add(request(k, FP)));
      try {
        assertThatThrownBy(() -> store.claimAll(batch)).isInstanceOf(RuntimeException.class);
      } finally {
        heal(keys.get(bad));
      }

      // Nothing of the batch is held: every key is claimable at once, by anyone, and the claims
      // given back (their work never ran) count no attempt.
      for (IdempotencyKey key : keys) {
        assertThat(store.claim(request(key, FP))).as("%s after the failed batch", key)
            .isInstanceOfSatisfying(Claim.Acquired.class,
                acquired -> assertThat(acquired.attempt()).isEqualTo(1));
      }
    }

    @Test
    void failingFirstLeavesNothingClaimed() {
      failsAt(0, 3);
    }

    @Test
    void failingInTheMiddleLeavesNothingClaimed() {
      failsAt(1, 3);
    }

    @Test
    void failingLastLeavesNothingClaimed() {
      failsAt(2, 3);
    }

    @Test
    void failingInTheMiddleOfALargeBatchLeavesNothingClaimed() {
      failsAt(17, 40);
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("durable steps")
  class Steps {

    @Test
    void aJournaledStepIsReplayedToATakeoverOnAnotherStoreInstance() {
      IdempotencyKey key = newKey();
      AtomicInteger mails = new AtomicInteger();
      IdempotencyStore restarted = anotherClient();
      try {
        assertThatThrownBy(() -> once(Once.builder(store)).execute(key, FP, Codecs.utf8(), a -> {
          a.step("mail", Codecs.utf8(), k -> "mail-" + mails.incrementAndGet());
          // This worker freezes past its lease; a worker on another store client takes over.
          clock.advance(LEASE);
          String taken = once(Once.builder(restarted)).execute(key, FP, Codecs.utf8(), b ->
              b.step("mail", Codecs.utf8(), k -> "mail-" + mails.incrementAndGet())
                  + "/" + b.step("ledger", Codecs.utf8(), k -> "ledger"));
          assertThat(taken).isEqualTo("mail-1/ledger");
          return a.step("ledger", Codecs.utf8(), k -> "zombie ledger");
        })).isInstanceOf(LeaseLostException.class);
      } finally {
        restarted.close();
      }

      assertThat(mails).hasValue(1);
      assertThat(once(Once.builder(store)).execute(key, FP, Codecs.utf8(), a -> "never"))
          .isEqualTo("mail-1/ledger");
    }

    /** Where the first worker's thread is stopped, then interrupted after a takeover. */
    enum KillPoint { BEFORE_STEP, AFTER_EFFECT, AFTER_STEP, INSIDE_COMPENSATION }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> killPoints() {
      List<org.junit.jupiter.params.provider.Arguments> points = new ArrayList<>();
      for (KillPoint point : new KillPoint[] {
          KillPoint.BEFORE_STEP, KillPoint.AFTER_EFFECT, KillPoint.AFTER_STEP}) {
        for (int step = 0; step < 3; step++) {
          points.add(org.junit.jupiter.params.provider.Arguments.of(point, step));
        }
      }
      points.add(org.junit.jupiter.params.provider.Arguments.of(KillPoint.INSIDE_COMPENSATION, 0));
      points.add(org.junit.jupiter.params.provider.Arguments.of(KillPoint.INSIDE_COMPENSATION, 1));
      return points.stream();
    }

    /**
     * A three-step saga on a real thread, stopped at {@code point} of step {@code at}, taken over
     * on another thread once its lease passed, then interrupted (its thread "killed"). Each
     * step's effect happens once (reconciled by the step key), each compensation once (the
     * refund API deduplicates on the compensation key, as the Step javadoc asks).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0} at step {1}")
    @org.junit.jupiter.params.provider.MethodSource("killPoints")
    void aSagaWhoseWorkerIsKilledAnywhereRunsEachEffectOnce(KillPoint point, int at)
        throws Exception {
      IdempotencyKey key = newKey();
      boolean fails = point == KillPoint.INSIDE_COMPENSATION;
      java.util.Map<String, Integer> effects = new java.util.concurrent.ConcurrentHashMap<>();
      Set<String> refunds = java.util.concurrent.ConcurrentHashMap.newKeySet();
      AtomicInteger refundCalls = new AtomicInteger();
      CountDownLatch reached = new CountDownLatch(1);
      CountDownLatch never = new CountDownLatch(1);
      Once once = once(Once.builder(store)
          .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class)));
      Thread[] first = new Thread[1];

      Callable<String> saga = () -> once.execute(key, FP, Codecs.utf8(), a -> {
        boolean killable = Thread.currentThread() == first[0];
        StringBuilder out = new StringBuilder();
        for (int s = 0; s < 3; s++) {
          int step = s;
          String name = "s" + step;
          if (killable && point == KillPoint.BEFORE_STEP && step == at) {
            stop(reached, never);
          }
          out.append(a.step(dev.once.Step.of(name, Codecs.utf8())
              .reconcile(k -> effects.containsKey(k) ? Optional.of(name + "-done")
                  : Optional.empty())
              .compensate((r, k) -> {
                refundCalls.incrementAndGet();
                refunds.add(k);
                if (killable && point == KillPoint.INSIDE_COMPENSATION && step == at) {
                  stop(reached, never);
                }
              }), k -> {
                a.ensureLease();
                effects.merge(k, 1, Integer::sum);
                if (killable && point == KillPoint.AFTER_EFFECT && step == at) {
                  stop(reached, never);
                }
                return name + "-done";
              }));
          if (killable && point == KillPoint.AFTER_STEP && step == at) {
            stop(reached, never);
          }
          if (fails && step == 1) {
            throw new IllegalArgumentException("declined");
          }
        }
        return out.toString();
      });

      ExecutorService threads = Executors.newFixedThreadPool(2);
      try {
        Future<String> stopped = threads.submit(() -> {
          first[0] = Thread.currentThread();
          return saga.call();
        });
        assertThat(reached.await(30, TimeUnit.SECONDS)).as("the first worker stopped").isTrue();
        clock.advance(LEASE.plusSeconds(1));
        Future<String> takeover = threads.submit(saga);
        String result = null;
        try {
          result = takeover.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          assertThat(fails).as("only the failing saga throws: %s", e.getCause()).isTrue();
        }
        stopped.cancel(true); // the stopped worker's thread is interrupted: it is killed
        try {
          stopped.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException
            | java.util.concurrent.CancellationException expected) {
          // killed
        }

        assertThat(effects.values()).as("effects per step").allMatch(n -> n == 1);
        if (fails) {
          assertThat(refunds).as("each completed step undone once").hasSize(2);
          assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "never"))
              .isInstanceOfSatisfying(ReplayedFailureException.class, e -> assertThat(
                  e.failureMessage()).isEqualTo("declined (compensated: s1, s0)"));
        } else {
          assertThat(effects).hasSize(3);
          assertThat(result).isEqualTo("s0-dones1-dones2-done");
          assertThat(once.execute(key, FP, Codecs.utf8(), a -> "never")).isEqualTo(result);
        }
      } finally {
        threads.shutdownNow();
      }
    }

    /** Stops this thread until it is interrupted (killed): it never goes on. */
    private void stop(CountDownLatch reached, CountDownLatch never) {
      reached.countDown();
      try {
        never.await();
      } catch (InterruptedException e) {
        throw new IllegalStateException("killed");
      }
      throw new IllegalStateException("cannot happen: nobody releases the latch");
    }

    @Test
    void aReconciledStepAndACompensatedSagaRunEachEffectOnce() {
      IdempotencyKey key = newKey();
      List<String> effects = new ArrayList<>();
      Once once = once(Once.builder(store)
          .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class)));
      dev.once.Step<String> charge = dev.once.Step.of("charge", Codecs.utf8())
          .reconcile(k -> effects.contains("charge") ? Optional.of("found") : Optional.empty())
          .compensate((r, k) -> effects.add("refund " + r));

      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> a.step(charge, k -> {
        effects.add("charge");
        throw new IllegalStateException("died before journaling"); // retryable
      }))).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        a.step(charge, k -> {
          effects.add("charge again");
          return "charged";
        });
        throw new IllegalArgumentException("card declined later");
      })).isInstanceOf(IllegalArgumentException.class);

      assertThat(effects).containsExactly("charge", "refund found");
      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "never"))
          .isInstanceOfSatisfying(ReplayedFailureException.class, e ->
              assertThat(e.failureMessage()).isEqualTo("card declined later (compensated: charge)"));
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("through Once")
  class ThroughOnce {

    @Test
    void duplicateIsReplayedWithoutRunningTheLogic() {
      Once once = once(Once.builder(store));
      IdempotencyKey key = newKey();
      AtomicInteger runs = new AtomicInteger();

      Result<String> first = once.call(key, FP, Codecs.utf8(), a -> "charge-" + runs.incrementAndGet());
      Result<String> second = once.call(key, FP, Codecs.utf8(), a -> "charge-" + runs.incrementAndGet());

      assertThat(first).isEqualTo(new Result<>("charge-1", false, record(key).token()));
      assertThat(second).isEqualTo(new Result<>("charge-1", true, first.token()));
      assertThat(runs).hasValue(1);
    }

    @Test
    void reusedKeyIsRejected() {
      Once once = once(Once.builder(store));
      IdempotencyKey key = newKey();
      once.execute(key, FP, Codecs.utf8(), a -> "first");

      assertThatThrownBy(() -> once.execute(key, OTHER_FP, Codecs.utf8(), a -> "second"))
          .isInstanceOf(KeyReusedException.class);
    }

    @Test
    void terminalFailureIsReplayedAsReplayedFailureException() {
      Once once = once(Once.builder(store)
          .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalStateException.class)));
      IdempotencyKey key = newKey();

      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        throw new IllegalStateException("insufficient funds");
      })).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "must not run"))
          .isInstanceOfSatisfying(ReplayedFailureException.class, e -> {
            assertThat(e.failureType()).isEqualTo(IllegalStateException.class.getName());
            assertThat(e.failureMessage()).isEqualTo("insufficient funds");
          });
    }

    @Test
    void retryableFailureRunsAgainWithTheNextToken() throws Exception {
      Once once = once(Once.builder(store));
      IdempotencyKey key = newKey();

      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        throw new java.io.IOException("gateway down");
      })).isInstanceOf(java.io.IOException.class);
      Result<String> retry = once.call(key, FP, Codecs.utf8(), a -> "attempt " + a.attemptNumber());

      assertThat(retry).isEqualTo(new Result<>("attempt 2", false, record(key).token()));
      assertThat(record(key).attempts()).isEqualTo(2);
    }

    @Test
    void checkpointsResumeAfterTakeover() {
      Once once = once(Once.builder(store));
      IdempotencyKey key = newKey();
      // First worker checkpoints, then "crashes": its claim stays IN_PROGRESS.
      Claim.Acquired crashed = acquire(key);
      store.checkpoint(key, crashed.token(), Checkpoint.of("debited", "tx-77".getBytes(StandardCharsets.UTF_8)),
          clock.instant());
      clock.set(crashed.leaseUntil());

      String result = once.execute(key, FP, Codecs.utf8(), a -> {
        assertThat(a.takeover()).isTrue();
        return a.lastCheckpoint().map(c -> "resumed after " + c.name()).orElse("from scratch");
      });

      assertThat(result).isEqualTo("resumed after debited");
    }

    @Test
    void zombieAttemptIsFencedOnCheckpointAndCompletion() {
      Once once = once(Once.builder(store));
      IdempotencyKey key = newKey();
      AtomicLong zombieToken = new AtomicLong();

      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        zombieToken.set(a.token());
        clock.set(a.leaseUntil());
        // A successor takes over while this attempt is paused.
        assertThat(claim(key)).isInstanceOf(Claim.Acquired.class);
        try {
          a.checkpoint("late", new byte[1]);
        } catch (LeaseLostException e) {
          assertThat(a.isLeaseLost()).isTrue();
        }
        return "zombie result";
      })).isInstanceOf(LeaseLostException.class);
      IdempotencyRecord r = record(key);
      assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(r.token()).isEqualTo(zombieToken.get() + 1);
      assertThat(r.checkpoint()).isNull();
    }

    @Test
    void invalidKeysAreRejectedBeforeTheStore() {
      assertThatThrownBy(() -> IdempotencyKey.of(scope, "")).isInstanceOf(InvalidKeyException.class);
      assertThatThrownBy(() -> IdempotencyKey.of(scope, "x".repeat(256)))
          .isInstanceOf(InvalidKeyException.class);
      assertThatThrownBy(() -> IdempotencyKey.of(scope, "bad\nkey"))
          .isInstanceOf(InvalidKeyException.class);
      assertThatThrownBy(() -> IdempotencyKey.of(scope, null)).isInstanceOf(InvalidKeyException.class);
      assertThat(store.find(IdempotencyKey.of(scope, "x".repeat(255)))).isEmpty();
    }

    @Test
    void anOversizedOutcomeFinishesTheKeyWithoutItsValueAndTheWorkNeverRunsAgain() {
      Once once = once(Once.builder(store).maxPayloadBytes(16));
      IdempotencyKey key = newKey();
      AtomicInteger runs = new AtomicInteger();

      assertThat(once.execute(key, FP, Codecs.utf8(), a -> "x".repeat(16 + runs.incrementAndGet())))
          .isEqualTo("x".repeat(17));
      IdempotencyRecord r = record(key);
      assertThat(r.status()).isEqualTo(Status.COMPLETED);
      assertThat(r.outcome().isNotStored()).isTrue();
      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "y" + runs.incrementAndGet()))
          .isInstanceOf(OutcomeNotStoredException.class)
          .hasMessageContaining("PayloadTooLargeException");
      assertThat(runs).hasValue(1);
    }

    @Test
    void oversizedCheckpointIsNotStored() {
      Once once = once(Once.builder(store).maxPayloadBytes(8));
      IdempotencyKey key = newKey();

      once.execute(key, FP, Codecs.utf8(), a -> {
        a.checkpoint("small", new byte[8]);
        assertThatThrownBy(() -> a.checkpoint("big", new byte[9]))
            .isInstanceOf(PayloadTooLargeException.class);
        assertThat(record(key).checkpoint()).isEqualTo(Checkpoint.of("small", new byte[8]));
        return "ok";
      });
    }

    @Test
    void nullArgumentsStoreNothing() {
      Once once = once(Once.builder(store));
      IdempotencyKey key = newKey();

      assertThatThrownBy(() -> once.execute(key, null, Codecs.utf8(), a -> "x"))
          .isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> once.execute(key, FP, null, a -> "x"))
          .isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), null))
          .isInstanceOf(NullPointerException.class);
      assertThat(store.find(key)).isEmpty();
    }

    @Test
    void aHostWhoseClockRunsAheadCannotTakeOverBeforeTheHoldersLeaseEnds() throws Exception {
      assertThat(raceWithASkewedHost(Duration.ofSeconds(10)))
          .as("effects with a margin covering the skew").isEqualTo(1);
    }

    @Test
    void withoutAMarginAHostWhoseClockRunsAheadTakesOverEarly() throws Exception {
      // The hazard the margin exists for, shown on the real store: both run the effect.
      assertThat(raceWithASkewedHost(Duration.ZERO)).as("effects without a margin").isEqualTo(2);
    }

    /**
     * A holder runs the work on one thread; on another, a host whose clock runs 5 s ahead claims
     * the same key when the holder has 1 s of its lease left. Returns how often the effect ran.
     */
    private int raceWithASkewedHost(Duration margin) throws Exception {
      Duration skew = Duration.ofSeconds(5);
      Once holder = Once.builder(store).clock(clock).lease(LEASE).retention(RETENTION)
          .clockSkewMargin(margin).build();
      Once ahead = Once.builder(store).clock(java.time.Clock.offset(clock, skew)).lease(LEASE)
          .retention(RETENTION).clockSkewMargin(margin).build();
      IdempotencyKey key = newKey();
      AtomicInteger effects = new AtomicInteger();
      CountDownLatch inside = new CountDownLatch(1);
      CountDownLatch tried = new CountDownLatch(1);
      ExecutorService threads = Executors.newFixedThreadPool(2);
      try {
        Future<String> first = threads.submit(() -> holder.execute(key, FP, Codecs.utf8(), a -> {
          effects.incrementAndGet();
          inside.countDown();
          assertThat(tried.await(30, TimeUnit.SECONDS)).isTrue();
          return "holder";
        }));
        assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
        clock.advance(LEASE.minusSeconds(1));
        Future<String> second = threads.submit(() -> {
          try {
            return ahead.execute(key, FP, Codecs.utf8(), a -> {
              effects.incrementAndGet();
              return "ahead";
            });
          } catch (RequestInProgressException e) {
            return "in progress";
          } finally {
            tried.countDown();
          }
        });
        String secondAnswer = second.get(30, TimeUnit.SECONDS);
        try {
          first.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          assertThat(e.getCause()).isInstanceOf(LeaseLostException.class);
        }
        if (effects.get() == 1) {
          assertThat(secondAnswer).isEqualTo("in progress");
        }
        return effects.get();
      } finally {
        threads.shutdownNow();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  @Nested
  @DisplayName("coalesced store calls")
  class Coalesced {

    /** Store methods called through {@link #gated}, in order. */
    private final List<String> calls = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final CountDownLatch gateEntered = new CountDownLatch(1);
    private final CountDownLatch gateOpen = new CountDownLatch(1);

    /**
     * The store, each call recorded; the first {@code claim} waits at a gate, so that the calls
     * arriving meanwhile queue up and share the next store call.
     */
    private IdempotencyStore gated() {
      java.util.concurrent.atomic.AtomicBoolean first =
          new java.util.concurrent.atomic.AtomicBoolean(true);
      return (IdempotencyStore) java.lang.reflect.Proxy.newProxyInstance(
          IdempotencyStore.class.getClassLoader(), new Class<?>[] {IdempotencyStore.class},
          (proxy, method, args) -> {
            calls.add(method.getName());
            if (method.getName().equals("claim") && first.getAndSet(false)) {
              gateEntered.countDown();
              assertThat(gateOpen.await(60, TimeUnit.SECONDS)).isTrue();
            }
            try {
              return method.invoke(store, args);
            } catch (java.lang.reflect.InvocationTargetException e) {
              throw e.getCause();
            }
          });
    }

    /** One batch call of each kind at a time: the calls queued behind it share the next. */
    private Once coalescing(IdempotencyStore on) {
      return once(Once.builder(on).coalesceStoreCalls(1));
    }

    /** Starts {@code task} on a thread of its own; the future completes with its answer. */
    private <T> java.util.concurrent.CompletableFuture<T> start(Callable<T> task,
        List<Thread> started) {
      java.util.concurrent.CompletableFuture<T> answer =
          new java.util.concurrent.CompletableFuture<>();
      Thread t = new Thread(() -> {
        try {
          answer.complete(task.call());
        } catch (Throwable e) {
          answer.completeExceptionally(e);
        }
      });
      t.setDaemon(true);
      started.add(t);
      t.start();
      return answer;
    }

    /** Waits (polling, with a deadline) until {@code t} is parked, waiting for a shared call. */
    private void awaitParked(Thread t) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (t.getState() != Thread.State.WAITING) {
        assertThat(System.nanoTime()).as("%s parked in time", t).isLessThan(deadline);
        Thread.onSpinWait();
        Thread.yield();
      }
    }

    @Test
    void aKeyTheStoreRefusesInASharedClaimFailsOnlyItsOwnCaller() throws Exception {
      IdempotencyKey opener = newKey();
      IdempotencyKey good = newKey();
      IdempotencyKey bad = newKey();
      IdempotencyKey alsoGood = newKey();
      assumeTrue(poison(bad), "the store cannot inject a claim fault");
      List<Thread> threads = new ArrayList<>();
      try {
        Once once = coalescing(gated());
        var first = start(() -> once.execute(opener, FP, Codecs.utf8(), a -> "first"), threads);
        assertThat(gateEntered.await(60, TimeUnit.SECONDS)).isTrue();
        var answers = new ArrayList<java.util.concurrent.CompletableFuture<String>>();
        for (IdempotencyKey key : List.of(good, bad, alsoGood)) {
          answers.add(start(() -> once.execute(key, FP, Codecs.utf8(), a -> "ran " + key.key()),
              threads));
          awaitParked(threads.get(threads.size() - 1));
        }

        gateOpen.countDown();

        assertThat(first.get(60, TimeUnit.SECONDS)).isEqualTo("first");
        assertThat(answers.get(0).get(60, TimeUnit.SECONDS)).isEqualTo("ran " + good.key());
        assertThat(answers.get(2).get(60, TimeUnit.SECONDS)).isEqualTo("ran " + alsoGood.key());
        assertThat(answers.get(1)).failsWithin(60, TimeUnit.SECONDS);
        assertThat(calls).as("the three waiting calls shared one claimAll").contains("claimAll");
      } finally {
        gateOpen.countDown();
        heal(bad);
      }
      assertThat(store.claim(request(bad, FP))).as("nothing of the refused batch is held")
          .isInstanceOf(Claim.Acquired.class);
      assertThat(record(good).status()).isEqualTo(Status.COMPLETED);
      assertThat(record(alsoGood).status()).isEqualTo(Status.COMPLETED);
    }

    @Test
    void aZombiesCompletionRacingItsSuccessorsIsFencedPerKey() throws Exception {
      IdempotencyKey key = newKey();
      Once once = coalescing(store);
      CountDownLatch zombieWorking = new CountDownLatch(1);
      CountDownLatch successorWorking = new CountDownLatch(1);
      CountDownLatch finish = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      var zombie = start(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        zombieWorking.countDown();
        assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
        return "zombie";
      }), threads);
      assertThat(zombieWorking.await(60, TimeUnit.SECONDS)).isTrue();
      clock.advance(LEASE.plusSeconds(1));
      var successor = start(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        successorWorking.countDown();
        assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
        return "successor";
      }), threads);
      assertThat(successorWorking.await(60, TimeUnit.SECONDS)).isTrue();

      finish.countDown(); // both complete at once, through the same coalescer

      assertThat(successor.get(60, TimeUnit.SECONDS)).isEqualTo("successor");
      assertThat(zombie).failsWithin(60, TimeUnit.SECONDS).withThrowableThat()
          .havingCause().isInstanceOf(LeaseLostException.class);
      assertThat(once.execute(key, FP, Codecs.utf8(), a -> "never")).isEqualTo("successor");
    }

    @Test
    void manyCallersOnFewKeysRunEachKeyOnce() throws Exception {
      Once once = coalescing(store);
      List<IdempotencyKey> keys = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        keys.add(newKey());
      }
      java.util.Map<IdempotencyKey, AtomicInteger> runs =
          new java.util.concurrent.ConcurrentHashMap<>();
      CountDownLatch go = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      List<java.util.concurrent.CompletableFuture<Integer>> done = new ArrayList<>();
      for (int t = 0; t < RACERS; t++) {
        int offset = t;
        done.add(start(() -> {
          assertThat(go.await(60, TimeUnit.SECONDS)).isTrue();
          int answered = 0;
          for (int i = 0; i < keys.size(); i++) {
            IdempotencyKey key = keys.get((i + offset) % keys.size());
            try {
              String value = once.execute(key, FP, Codecs.utf8(), a -> {
                runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                return "value of " + key.key();
              });
              assertThat(value).isEqualTo("value of " + key.key());
              answered++;
            } catch (RequestInProgressException e) {
              answered++; // the original runs on another thread
            }
          }
          return answered;
        }, threads));
      }
      go.countDown();
      for (var d : done) {
        assertThat(d.get(60, TimeUnit.SECONDS)).isEqualTo(keys.size());
      }
      for (IdempotencyKey key : keys) {
        assertThat(runs.get(key)).as("runs of %s", key).hasValue(1);
        assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
      }
    }
  }
}
