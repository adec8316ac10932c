package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import org.junit.jupiter.api.Test;

/**
 * Checkpoints: the last one survives a takeover and a retryable failure.
 */
abstract class CheckpointsTester extends ConformanceTester {

  CheckpointsTester(StoreConformanceSuite suite) {
    super(suite);
  }

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
