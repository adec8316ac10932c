package dev.once.nearcache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The near cache over a store whose asynchronous claim answers on its client's event loop
 * (Redis): nothing the cache does with the answer may wait for the store there.
 */
class RedisNearCacheAsyncTest {

  private static final Fingerprint FP = Fingerprint.of("body");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);

  /**
   * Found by the model test, which hung: the cache read a replayed record back (to learn it) on
   * the thread that answered the claim, Lettuce's event loop, which then could not read the
   * answer it waited for.
   */
  @Test
  void aReplayAnsweredOnTheEventLoopIsLearnedOnTheExecutorNotThere() throws Exception {
    IdempotencyStore redis = Servers.Redis.newStore();
    try (NearCacheStore cache = NearCacheStore.wrap(redis).build()) {
      replayLearnedOffTheEventLoop(redis, cache);
    }
  }

  private static void replayLearnedOffTheEventLoop(IdempotencyStore redis, NearCacheStore cache)
      throws Exception {
    BlockingQueue<Runnable> handed = new LinkedBlockingQueue<>();
    Executor hand = handed::add;
    IdempotencyKey key = IdempotencyKey.of("near-async", "k-" + System.nanoTime());
    Instant now = Instant.now();
    // Completed through Redis directly, so that the cache has not seen it.
    long token = ((Claim.Acquired) redis.claim(request(key, now))).token();
    Outcome outcome = Outcome.success("text/plain", "done".getBytes(StandardCharsets.UTF_8));
    redis.complete(key, token, outcome, now, RETENTION);

    CompletableFuture<Claim> replay = cache.claimAsync(request(key, now), hand)
        .toCompletableFuture();

    assertThat(replay.get(30, TimeUnit.SECONDS)).isEqualTo(new Claim.Replay(outcome, token));
    Runnable learning = handed.poll(30, TimeUnit.SECONDS);
    assertThat(learning).as("the read-back handed to the executor").isNotNull();
    learning.run();
    assertThat(cache.claimAsync(request(key, now), task -> {
      throw new AssertionError("asked the store again");
    }).toCompletableFuture().getNow(null)).as("answered from memory")
        .isEqualTo(new Claim.Replay(outcome, token));
  }

  private static ClaimRequest request(IdempotencyKey key, Instant now) {
    return new ClaimRequest(key, FP, now, LEASE, RETENTION);
  }
}
