package dev.once.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.spi.Status;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * {@link OnceReactor} over Redis's native asynchronous claim and completion, on real threads: the
 * answers come on Lettuce's event loop, the engine goes on on its executor. The paths of
 * {@link OnceReactorContract} that hold without stepping by hand: an empty {@code Mono} stored,
 * and a subscriber that cancels after the claim.
 */
class RedisNativeOnceReactorTest {

  private static final Fingerprint FP = Fingerprint.of("body");

  @Test
  void anEmptyMonoIsStoredAndACancelledSubscriberLosesNothing() throws Exception {
    ExecutorService executor = Executors.newCachedThreadPool();
    try {
      OnceReactor once = OnceReactor.of(Once.builder(Stores.Redis.STORE)
          .lease(Duration.ofSeconds(30)).asyncExecutor(executor).build());
      AtomicInteger runs = new AtomicInteger();

      IdempotencyKey empty = IdempotencyKey.of("reactor.native", UUID.randomUUID().toString());
      for (int i = 0; i < 2; i++) {
        assertThat(once.execute(empty, FP, Codecs.utf8(), attempt -> {
          runs.incrementAndGet();
          return Mono.<String>empty();
        }).block(Duration.ofSeconds(30))).isNull();
      }
      assertThat(runs).as("an empty Mono is a stored result").hasValue(1);

      IdempotencyKey cancelled = IdempotencyKey.of("reactor.native", UUID.randomUUID().toString());
      Sinks.One<String> pending = Sinks.one();
      List<Object> delivered = new CopyOnWriteArrayList<>();
      Disposable subscriber = once.execute(cancelled, FP, Codecs.utf8(), attempt -> {
        runs.incrementAndGet();
        return pending.asMono();
      }).subscribe(delivered::add, delivered::add);
      awaitStatus(cancelled, Status.IN_PROGRESS);
      subscriber.dispose();
      pending.tryEmitValue("charged");

      awaitStatus(cancelled, Status.COMPLETED);
      assertThat(once.execute(cancelled, FP, Codecs.utf8(), attempt -> Mono.just("again"))
          .block(Duration.ofSeconds(30))).isEqualTo("charged");
      assertThat(delivered).isEmpty();
      assertThat(runs).hasValue(2);
    } finally {
      executor.shutdownNow();
    }
  }

  private static void awaitStatus(IdempotencyKey key, Status status) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (Stores.Redis.STORE.find(key).map(r -> r.status()).orElse(null) != status) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(key + " never became " + status);
      }
      Thread.onSpinWait();
    }
  }
}
