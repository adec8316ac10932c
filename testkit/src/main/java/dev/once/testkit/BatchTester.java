package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Batch claims ({@code claimAll}, with and without a lock wait): every outcome answered in
 * request order; an empty batch.
 */
abstract class BatchTester extends ConformanceTester {

  BatchTester(StoreConformanceSuite suite) {
    super(suite);
  }

  @Test
  void answersEveryOutcomeInRequestOrder() {
    answersEveryOutcomeInRequestOrder(store::claimAll);
  }

  /** With no row held by another transaction, a lock wait changes nothing. */
  @Test
  void answersEveryOutcomeInRequestOrderWithALockWait() {
    answersEveryOutcomeInRequestOrder(requests -> store.claimAll(requests, Duration.ofMillis(50)));
  }

  private void answersEveryOutcomeInRequestOrder(
      Function<List<ClaimRequest>, List<Claim>> claimAll) {
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

    List<Claim> claims = claimAll.apply(List.of(
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

  /**
   * {@code claimFromMemory} answers exactly as {@code claim} would, or not at all (null); never
   * for a key whose claim would write (a new key, a failed one to retry).
   */
  @Test
  void claimFromMemoryAnswersAsAClaimWouldOrNotAtAll() {
    IdempotencyKey completed = newKey();
    complete(completed, acquire(completed).token(), text("done"));
    IdempotencyKey running = newKey();
    acquire(running);
    IdempotencyKey failed = newKey();
    store.fail(failed, acquire(failed).token(), "x", clock.instant(), RETENTION);
    IdempotencyKey fresh = newKey();

    for (IdempotencyKey key : List.of(completed, running, failed, fresh)) {
      for (var fingerprint : List.of(FP, OTHER_FP)) {
        ClaimRequest request = request(key, fingerprint);
        Claim fromMemory = store.claimFromMemory(request);
        if (fromMemory != null) {
          assertThat(fromMemory).as("%s with %s", key, fingerprint)
              .isNotInstanceOf(Claim.Acquired.class).isEqualTo(store.claim(request));
        }
      }
    }
    assertThat(store.claimFromMemory(request(fresh, FP))).isNull();
    assertThat(store.claimFromMemory(request(failed, FP))).isNull();
  }

  @Test
  void emptyBatchClaimsNothing() {
    assertThat(store.claimAll(List.of())).isEmpty();
  }
}
