package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.testkit.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Redis crashing under the store: each test has a server of its own, which it kills. */
class RedisFaultTest {

  private static final Duration TIMEOUT = Duration.ofMillis(500);
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("payload");

  private final ManualClock clock = new ManualClock();

  @Test
  void aKilledServerFailsCallsWithinTheTimeoutAndTheStoreRecoversWhenItReturns() {
    try (RedisServerProcess server = RedisServerProcess.builder().appendOnlyFsyncAlways().start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      IdempotencyKey before = IdempotencyKey.of("fault", "before");
      long token = ((Claim.Acquired) store.claim(request(before))).token();

      server.kill();
      long start = System.nanoTime();
      assertThatThrownBy(() -> store.claim(request(IdempotencyKey.of("fault", "during"))))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("Redis (" + server.uri() + ")")
          .hasMessageContaining("claim of fault//during");
      Duration waited = Duration.ofNanos(System.nanoTime() - start);
      assertThatThrownBy(() -> store.find(before)).isInstanceOf(StoreUnavailableException.class);

      server.restart();
      Claim after = awaitRecovery(() -> store.claim(request(IdempotencyKey.of("fault", "after"))));

      assertThat(waited).isLessThan(TIMEOUT.plusSeconds(2));
      assertThat(after).isInstanceOf(Claim.Acquired.class);
      assertThat(store.find(before)).get().satisfies(r -> assertThat(r.token()).isEqualTo(token));
      assertThat(store.claim(request(before))).isInstanceOf(Claim.InProgress.class);
    }
  }

  @Test
  void withAppendFsyncAlwaysARestartMidRunLosesNoCompletedKeyAndRunsNothingTwice()
      throws Exception {
    int keys = 300;
    try (RedisServerProcess server = RedisServerProcess.builder().appendOnlyFsyncAlways().start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      Once once = Once.builder(store).clock(clock).lease(LEASE).build();
      Map<Integer, AtomicInteger> runs = new ConcurrentHashMap<>();
      Set<Integer> acknowledged = ConcurrentHashMap.newKeySet();
      Set<Integer> stranded = ConcurrentHashMap.newKeySet();
      AtomicInteger storeErrors = new AtomicInteger();
      AtomicInteger next = new AtomicInteger();
      CountDownLatch halfway = new CountDownLatch(keys / 3);
      ExecutorService workers = Executors.newFixedThreadPool(4);
      List<Future<?>> done = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        done.add(workers.submit(() -> {
          for (int i = next.getAndIncrement(); i < keys; i = next.getAndIncrement()) {
            int k = i;
            while (true) {
              try {
                once.call(IdempotencyKey.of("aof", "k" + k), FP, Codecs.utf8(), a -> {
                  runs.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
                  return "v" + k;
                });
                acknowledged.add(k);
                halfway.countDown();
                break;
              } catch (StoreUnavailableException e) {
                storeErrors.incrementAndGet();
              } catch (LeaseLostException e) {
                // The completion's reply was lost with the connection and Lettuce re-sent it
                // after the restart; the first copy was applied, so the copy finds the record
                // COMPLETED. As with any lease lost, the caller retries: the retry replays.
                storeErrors.incrementAndGet();
              } catch (RequestInProgressException e) {
                // Claimed before the crash, completion lost with the connection: its lease
                // must pass before anyone may run it again.
                stranded.add(k);
                break;
              }
            }
          }
          return null;
        }));
      }
      assertThat(halfway.await(60, TimeUnit.SECONDS)).isTrue();
      server.kill();
      server.restart();
      for (Future<?> f : done) {
        f.get(120, TimeUnit.SECONDS);
      }
      workers.shutdown();

      // Every key acknowledged before or after the crash replays and never runs again.
      for (int k : acknowledged) {
        Result<String> replay = once.call(IdempotencyKey.of("aof", "k" + k), FP, Codecs.utf8(),
            a -> "ran again");
        assertThat(replay.replayed()).as("key %s replays", k).isTrue();
        assertThat(replay.value()).isEqualTo("v" + k);
        assertThat(runs.get(k)).as("runs of key %s", k).hasValue(1);
      }
      assertThat(acknowledged.size() + stranded.size()).isEqualTo(keys);
      assertThat(acknowledged.size()).isGreaterThan(keys / 3);
      // A stranded key is taken over once its lease passed: the one case that runs twice.
      clock.advance(LEASE);
      for (int k : stranded) {
        assertThat(once.call(IdempotencyKey.of("aof", "k" + k), FP, Codecs.utf8(), a -> "v" + k)
            .replayed()).isFalse();
      }
    }
  }

  @Test
  void withoutPersistenceARestartForgetsEverything() {
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      IdempotencyKey key = IdempotencyKey.of("plain", "k");
      store.claim(request(key));

      server.kill();
      server.restart();

      assertThat(awaitRecovery(() -> store.find(key))).isEmpty();
    }
  }

  private ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, clock.instant(), LEASE, Duration.ofHours(1));
  }

  /** Retries {@code call} while the store is unavailable, for at most 20 s. */
  private static <T> T awaitRecovery(java.util.function.Supplier<T> call) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (true) {
      try {
        return call.get();
      } catch (StoreUnavailableException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
      }
    }
  }
}
