package dev.once.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The SPI's default {@code claimAll}, as a store that overrides only the single-key methods gets
 * it: a failing claim in the middle of a batch leaves the caller holding none of the batch's
 * claims.
 */
class DefaultBatchMethodsTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final Fingerprint FP = Fingerprint.of("request");

  /** An in-memory store whose server "goes away" at the n-th claim. */
  private static final class FailingAtClaim implements IdempotencyStore {
    private final InMemoryStore records = new InMemoryStore();
    private final int failingClaim;
    private int claims;

    FailingAtClaim(int failingClaim) {
      this.failingClaim = failingClaim;
    }

    @Override
    public Claim claim(ClaimRequest request) {
      if (++claims == failingClaim) {
        throw new StoreUnavailableException("connection reset at claim " + claims, null);
      }
      return records.claim(request);
    }

    @Override
    public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
        Duration retention) {
      records.complete(key, token, outcome, now, retention);
    }

    @Override
    public void fail(IdempotencyKey key, long token, String error, Instant now,
        Duration retention) {
      records.fail(key, token, error, now, retention);
    }

    @Override
    public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
      return records.extend(key, token, now, lease);
    }

    @Override
    public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
      records.checkpoint(key, token, checkpoint, now);
    }

    @Override
    public Optional<IdempotencyRecord> find(IdempotencyKey key) {
      return records.find(key);
    }

    @Override
    public int purgeExpired(Instant now, int limit) {
      return records.purgeExpired(now, limit);
    }

    @Override
    public int reapExpiredLeases(Instant now, int limit) {
      return records.reapExpiredLeases(now, limit);
    }
  }

  @Test
  void aFailedBatchClaimReleasesTheClaimsItAcquired() {
    FailingAtClaim store = new FailingAtClaim(3);
    Instant now = ManualClock.DEFAULT_START;
    IdempotencyKey a = IdempotencyKey.of("default", "a");
    IdempotencyKey b = IdempotencyKey.of("default", "b");
    IdempotencyKey c = IdempotencyKey.of("default", "c");

    assertThatThrownBy(() -> store.claimAll(List.of(new ClaimRequest(a, FP, now, LEASE, RETENTION),
        new ClaimRequest(b, FP, now, LEASE, RETENTION),
        new ClaimRequest(c, FP, now, LEASE, RETENTION))))
        .isInstanceOf(StoreUnavailableException.class);

    assertThat(store.find(a).map(IdempotencyRecord::status)).contains(Status.FAILED);
    assertThat(store.find(b).map(IdempotencyRecord::status)).contains(Status.FAILED);
    assertThat(store.find(c)).isEmpty();
    // Released, not left to their lease: the next claim retries at once.
    Claim again = store.claim(new ClaimRequest(a, FP, now.plusMillis(1), LEASE, RETENTION));
    assertThat(again).isInstanceOf(Claim.Acquired.class);
    assertThat(((Claim.Acquired) again).attempt()).isEqualTo(2);
  }
}
