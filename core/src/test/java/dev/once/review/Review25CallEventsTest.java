package dev.once.review;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.StoreUnavailableException;
import dev.once.batch.BatchExecutor;
import dev.once.spi.IdempotencyStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Review of issue 25 items 3-4: reproducers for the call-scoped events. */
class Review25CallEventsTest {

  final InMemoryStore memory = new InMemoryStore();
  final AtomicLong nanos = new AtomicLong(1_000);
  final List<String> events = new CopyOnWriteArrayList<>();

  final OnceListener recorder = new OnceListener() {
    @Override
    public void onCallStarted(Call call) {
      events.add("started");
    }

    @Override
    public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
      events.add("ended " + outcome + " failure=" + (failure == null ? null
          : failure.getClass().getSimpleName()));
    }

    @Override
    public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
      events.add("onOutcomeUnknown");
    }

    @Override
    public void onLeaseLost(IdempotencyKey key, long token) {
      events.add("onLeaseLost");
    }

    @Override
    public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
      events.add("onFailed terminal=" + terminal);
    }
  };

  /** The store, with every {@code method} refused as unavailable. */
  IdempotencyStore refusing(String method) {
    return (IdempotencyStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {IdempotencyStore.class}, (proxy, m, args) -> {
          if (m.getName().equals(method)) {
            throw new StoreUnavailableException(method + " down", null);
          }
          try {
            return m.invoke(memory, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /**
   * OnceListener#onCallEnded: "told once per onCallStarted, after every other event of the call".
   * A terminal failure whose storing fails is ended FAILED_TERMINAL ("the failure is stored")
   * before the store is even asked, and onOutcomeUnknown of the same call comes after the end.
   */
  @Test
  void terminalFailureNotStoredEndsFailedTerminalAndIsFollowedByOutcomeUnknown() {
    Once once = Once.builder(refusing("complete")).ticker(nanos::get).listener(recorder)
        .sleeper(d -> {})
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("p", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw new IllegalArgumentException("declined");
        })).isInstanceOf(IllegalArgumentException.class);

    // what the contract (and CallOutcome.OUTCOME_UNKNOWN's javadoc) asks for would be:
    // [started, onFailed terminal=true, onOutcomeUnknown, ended OUTCOME_UNKNOWN ...]
    assertThat(events).containsExactly("started", "onFailed terminal=true",
        "onOutcomeUnknown", "ended OUTCOME_UNKNOWN failure=StoreUnavailableException");
  }

  /** Same with a retryable failure whose release (fail) the store refuses. */
  @Test
  void retryableFailureWhoseReleaseFailsIsFollowedByOutcomeUnknownAfterTheEnd() {
    Once once = Once.builder(refusing("fail")).ticker(nanos::get).listener(recorder)
        .sleeper(d -> {}).build();
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("p", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw new IllegalStateException("gateway down");
        })).isInstanceOf(IllegalStateException.class);

    assertThat(events.indexOf("onOutcomeUnknown"))
        .as("onOutcomeUnknown must come before onCallEnded: %s", events)
        .isLessThan(events.indexOf(events.stream().filter(e -> e.startsWith("ended"))
            .findFirst().orElseThrow()));
  }

  /**
   * A batch whose handler throws an Error: the call in hand ends ERROR with a null failure (the
   * javadoc: "failure is ... the unexpected exception (ERROR)"), and the message after it, never
   * claimed-and-run, ends ERROR too instead of NOT_RUN.
   */
  @Test
  void batchErrorEndsTheFollowingUnrunMessagesAsErrorWithoutFailure() {
    Once once = Once.builder(memory).ticker(nanos::get).listener(recorder).build();
    BatchExecutor<String> executor = BatchExecutor.<String>builder(once, (m, attempt) -> {
      if (m.equals("boom")) {
        throw new AssertionError("fatal");
      }
    }).scope("orders").key(m -> m).build();

    assertThatThrownBy(() -> executor.process(List.of("boom", "next")))
        .isInstanceOf(AssertionError.class);

    assertThat(events).containsExactly("started", "started",
        "ended ERROR failure=AssertionError", "ended NOT_RUN failure=null");
  }
}
