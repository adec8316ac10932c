package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.redis.internal.KeyLayout;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.ClaimRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link Durability#replicas}: a write is answered only once a replica has it. */
class RedisDurabilityTest {

  @Test
  void waitForAReplicaMakesEveryAnsweredWriteVisibleOnTheReplica() {
    try (RedisServerProcess primary = RedisServerProcess.start();
        RedisServerProcess replica = RedisServerProcess.builder().replicaOf(primary).start()) {
      awaitOnlineReplica(primary);
      // A generous WAIT: what is asserted is that an answered write is on the replica, not how
      // fast a replica acknowledges on a loaded machine (1 s was missed under stress-ng).
      try (RedisStore store = RedisStore.builder(primary.uri())
          .durability(Durability.replicas(1, Duration.ofSeconds(20)))
          .build();
          RedisStore impatient = RedisStore.builder(primary.uri())
              .durability(Durability.replicas(1, Duration.ofMillis(500)))
              .build()) {
        Once once = Once.builder(store).build();
        for (int i = 0; i < 20; i++) {
          IdempotencyKey key = IdempotencyKey.of("wait", "k" + i);
          once.execute(key, Fingerprint.of("p"), Codecs.utf8(), a -> "done");

          // No polling: WAIT returned, so the replica already applied the completion.
          assertThat((String) replica.call("GET", recordKey(store, key))).startsWith("2 C ");
        }

        // The native asynchronous claim waits for the replica too, without blocking a thread.
        IdempotencyKey async = IdempotencyKey.of("wait", "async");
        store.claimAsync(new ClaimRequest(async, Fingerprint.of("p"), Instant.now(),
            Duration.ofSeconds(30), Duration.ofHours(1)), task -> {
              throw new AssertionError("the claim needed a blocking thread");
            }).toCompletableFuture().join();
        assertThat((String) replica.call("GET", recordKey(store, async))).isNotNull();

        replica.kill();
        IdempotencyKey lonelyAsync = IdempotencyKey.of("wait", "lonely-async");
        assertThat(impatient.find(lonelyAsync)).isEmpty(); // connected: the claim goes natively
        assertThat(impatient.claimAsync(new ClaimRequest(lonelyAsync, Fingerprint.of("p"),
            Instant.now(), Duration.ofSeconds(30), Duration.ofHours(1)), task -> {
              throw new AssertionError("the claim needed a blocking thread");
            })
            .toCompletableFuture())
            .failsWithin(Duration.ofSeconds(30))
            .withThrowableOfType(java.util.concurrent.ExecutionException.class)
            .havingCause().isInstanceOfSatisfying(StoreUnavailableException.class, e -> {
              assertThat(e).hasMessageContaining(
                  "only 0 of 1 replicas acknowledged the claim of wait/lonely-async");
              assertThat(e.mayHaveBeenApplied()).isTrue();
            });
        IdempotencyKey lonely = IdempotencyKey.of("wait", "lonely");
        assertThatThrownBy(() -> impatient.claim(new ClaimRequest(lonely, Fingerprint.of("p"),
            Instant.now(), Duration.ofSeconds(30), Duration.ofHours(1))))
            .isInstanceOf(StoreUnavailableException.class)
            .hasMessageContaining("only 0 of 1 replicas acknowledged the claim of wait/lonely");
        assertThat(impatient.durability())
            .isEqualTo(Durability.replicas(1, Duration.ofMillis(500)));
      }
    }
  }

  static String recordKey(RedisStore store, IdempotencyKey key) {
    return new String(new KeyLayout(store.keyPrefix()).record(key), StandardCharsets.ISO_8859_1);
  }

  /** Until the primary counts the replica as online: only online replicas acknowledge WAIT. */
  private static void awaitOnlineReplica(RedisServerProcess primary) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!((String) primary.call("INFO", "replication")).contains("state=online")) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the replica did not connect to its primary");
      }
      RedisServerProcess.pause();
    }
  }
}
