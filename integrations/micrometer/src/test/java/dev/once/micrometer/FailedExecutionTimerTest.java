package dev.once.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.spi.IdempotencyStore;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * once.executions{result=failed} is timed from the acquired claim, as result=completed is: not
 * from the call's start (its claim, a waiting duplicate's polls and, in a batch, every message
 * handled before it). Issue 25 review.
 */
class FailedExecutionTimerTest {

  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final InMemoryStore memory = new InMemoryStore();
  final AtomicLong nanos = new AtomicLong();
  final MicrometerOnceListener listener = MicrometerOnceListener.builder(registry)
      .store(memory).build();

  double millis(String result) {
    Timer t = registry.find(OnceMetrics.EXECUTIONS).tag(OnceMetrics.TAG_RESULT, result).timer();
    return t == null ? -1 : t.totalTime(TimeUnit.MILLISECONDS);
  }

  @Test
  void aFailedExecutionIsTimedFromItsAcquiredClaimAsACompletedOneIs() {
    // a store whose claim takes 500 ms on the ticker
    IdempotencyStore slowClaims = (IdempotencyStore) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {IdempotencyStore.class}, (p, m, args) -> {
          if (m.getName().equals("claim")) {
            nanos.addAndGet(Duration.ofMillis(500).toNanos());
          }
          try {
            return m.invoke(memory, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    Once once = Once.builder(slowClaims).ticker(nanos::get).listener(listener).build();
    once.execute(IdempotencyKey.of("p", "ok"), Fingerprint.of("a"), Codecs.utf8(), a -> {
      nanos.addAndGet(Duration.ofMillis(10).toNanos());
      return "v";
    });
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("p", "bad"), Fingerprint.of("a"),
        Codecs.utf8(), a -> {
          nanos.addAndGet(Duration.ofMillis(10).toNanos());
          throw new IllegalStateException("down");
        })).hasMessage("down");

    assertThat(millis(OnceMetrics.COMPLETED)).isEqualTo(10.0);
    assertThat(millis(OnceMetrics.FAILED)).as("failed execution of 10 ms").isEqualTo(10.0);
  }

  @Test
  void aFailedMessageOfABatchIsTimedWithoutTheMessagesHandledBeforeIt() {
    Once once = Once.builder(memory).ticker(nanos::get).listener(listener).build();
    BatchExecutor<String> executor = BatchExecutor.<String>builder(once, (m, attempt) -> {
      nanos.addAndGet(Duration.ofMillis(m.equals("slow") ? 5_000 : 10).toNanos());
      if (m.equals("bad")) {
        throw new IllegalStateException("down");
      }
    }).scope("orders").key(m -> m).build();

    executor.process(List.of("slow", "bad"));

    // (completed: 5010 ms, the batch's completeAll comes after "bad"; as before issue 25)
    assertThat(millis(OnceMetrics.FAILED)).as("the failed handler ran 10 ms").isEqualTo(10.0);
  }
}
