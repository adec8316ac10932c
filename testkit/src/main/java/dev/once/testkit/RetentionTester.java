package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Retention and maintenance: replays until the instant retention ends, a new record at that
 * boundary, {@code purgeExpired} in bounded batches that never delete a live lease, and
 * {@code reapExpiredLeases} turning passed leases into failures that fence their workers.
 */
abstract class RetentionTester extends ConformanceTester {

  RetentionTester(StoreConformanceSuite suite) {
    super(suite);
  }

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
