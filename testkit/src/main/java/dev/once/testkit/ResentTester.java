package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Commands re-sent after their answer was lost: a re-sent claim, takeover or batch claim is
 * acquired with its own token; a repeated completion or failure is acknowledged and changes
 * nothing; a zombie's repeated writes are still fenced.
 */
abstract class ResentTester extends ConformanceTester {

  ResentTester(StoreConformanceSuite suite) {
    super(suite);
  }

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
