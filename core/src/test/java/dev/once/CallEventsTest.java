package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.OnceListener.Call;
import dev.once.OnceListener.CallOutcome;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.spi.IdempotencyStore;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Issue 25, item 4: each call is told as a pair (onCallStarted … onCallEnded) with its store calls
 * and its acquisition in between, every event carrying the call, and every duration read from the
 * injected ticker, so a listener matches events by call and a test moves time instead of sleeping.
 */
class CallEventsTest {

  final InMemoryStore store = new InMemoryStore();
  final ManualClock clock = new ManualClock();
  /** The ticker: moved by the tests only. */
  final AtomicLong nanos = new AtomicLong(1_000);
  final Recorder recorder = new Recorder();
  final Once once = Once.builder(store).clock(clock).ticker(nanos::get).listener(recorder)
      .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
      .build();

  /** Every call-scoped event, as text, and the calls it saw. */
  static final class Recorder implements OnceListener {
    final List<String> events = new CopyOnWriteArrayList<>();
    final List<Call> calls = new CopyOnWriteArrayList<>();
    final List<Throwable> failures = new CopyOnWriteArrayList<>();

    @Override
    public void onCallStarted(Call call) {
      calls.add(call);
      events.add(call.id() + " started " + call.key().key() + " token=" + call.token()
          + " attempt=" + call.attempt());
    }

    @Override
    public void onStoreCall(Call call, String operation, Duration elapsed, boolean succeeded) {
      events.add(call.id() + " store " + operation + " " + elapsed.toMillis() + "ms "
          + (succeeded ? "ok" : "failed"));
    }

    @Override
    public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
      calls.add(call);
      events.add(call.id() + " acquired attempt=" + call.attempt()
          + (takeover ? " takeover" : ""));
    }

    @Override
    public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
      calls.add(call);
      failures.add(failure);
      events.add(call.id() + " ended " + outcome + " " + elapsed.toMillis() + "ms");
    }

    /** The events with each call's id replaced by its order of appearance (c1, c2, …). */
    List<String> named() {
      List<Long> ids = calls.stream().map(Call::id).distinct().toList();
      return events.stream().map(e -> {
        long id = Long.parseLong(e.substring(0, e.indexOf(' ')));
        return "c" + (ids.indexOf(id) + 1) + e.substring(e.indexOf(' '));
      }).collect(Collectors.toList());
    }
  }

  @Test
  void aCallIsToldAsAPairWithItsStoreCallsAndItsClaimBetweenTimedOnTheTicker() {
    String value = once.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          nanos.addAndGet(Duration.ofMillis(25).toNanos()); // the work takes 25 ms
          return "done";
        });

    assertThat(value).isEqualTo("done");
    assertThat(recorder.named()).containsExactly(
        "c1 started k1 token=-1 attempt=0",
        "c1 store claim 0ms ok",
        "c1 acquired attempt=1",
        "c1 store complete 0ms ok",
        "c1 ended COMPLETED 25ms");
    Call ended = recorder.calls.get(recorder.calls.size() - 1);
    assertThat(ended.acquired()).isTrue();
    assertThat(ended.token()).isPositive();
    assertThat(recorder.calls.get(0).acquired()).isFalse();
  }

  @Test
  void eachCallHasItsOwnIdAndADuplicateEndsAsItsAnswer() {
    run("k1", "a");
    run("k1", "a");
    assertThatThrownBy(() -> run("k1", "b")).isInstanceOf(KeyReusedException.class);

    assertThat(recorder.named()).containsExactly(
        "c1 started k1 token=-1 attempt=0", "c1 store claim 0ms ok", "c1 acquired attempt=1",
        "c1 store complete 0ms ok", "c1 ended COMPLETED 0ms",
        "c2 started k1 token=-1 attempt=0", "c2 store claim 0ms ok", "c2 ended REPLAYED 0ms",
        "c3 started k1 token=-1 attempt=0", "c3 store claim 0ms ok", "c3 ended MISMATCH 0ms");
  }

  @Test
  void aFailureEndsTheCallWithItAndWhatIsWrittenAfterIsNotToldAsTheCalls() {
    IllegalStateException retryable = new IllegalStateException("gateway down");
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw retryable;
        })).isSameAs(retryable);

    assertThat(recorder.named()).containsExactly(
        "c1 started k1 token=-1 attempt=0", "c1 store claim 0ms ok", "c1 acquired attempt=1",
        "c1 ended FAILED 0ms");
    assertThat(recorder.failures).containsExactly(retryable);
  }

  @Test
  void aClaimTheStoreRefusesEndsTheCallNotRun() {
    StoreUnavailableException down = new StoreUnavailableException("down", null);
    IdempotencyStore failing = (IdempotencyStore) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {IdempotencyStore.class},
        (proxy, method, args) -> {
          if (method.getName().equals("claim")) {
            throw down;
          }
          return method.invoke(store, args);
        });
    Once refused = Once.builder(failing).ticker(nanos::get).listener(recorder).build();

    assertThatThrownBy(() -> refused.execute(IdempotencyKey.of("payments", "k1"),
        Fingerprint.of("a"), Codecs.utf8(), attempt -> "never")).isSameAs(down);

    assertThat(recorder.named()).containsExactly(
        "c1 started k1 token=-1 attempt=0", "c1 store claim 0ms failed", "c1 ended NOT_RUN 0ms");
    assertThat(recorder.failures).containsExactly(down);
  }

  @Test
  void aListenerThrowingFromTheCallScopedEventsNeverFailsTheCall() {
    OnceListener throwing = new OnceListener() {
      @Override
      public void onCallStarted(Call call) {
        throw new IllegalStateException("started");
      }

      @Override
      public void onStoreCall(Call call, String operation, Duration elapsed, boolean ok) {
        throw new NoClassDefFoundError("io/micrometer/Missing");
      }

      @Override
      public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
        throw new IllegalStateException("acquired");
      }

      @Override
      public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable f) {
        throw new IllegalStateException("ended");
      }
    };
    Once guarded = once.toBuilder().listener(OnceListener.compose(throwing, recorder)).build();
    Once alone = once.toBuilder().listener(throwing).build();

    assertThat(guarded.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> "v")).isEqualTo("v");
    assertThat(alone.execute(IdempotencyKey.of("payments", "k2"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> "w")).isEqualTo("w");
    assertThat(alone.execute(IdempotencyKey.of("payments", "k2"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> "again")).isEqualTo("w");

    // The composed listener after the throwing one heard the whole call.
    assertThat(recorder.named()).containsExactly(
        "c1 started k1 token=-1 attempt=0", "c1 store claim 0ms ok", "c1 acquired attempt=1",
        "c1 store complete 0ms ok", "c1 ended COMPLETED 0ms");
  }

  @Test
  void everyMessageOfABatchIsACallSharingTheBatchStoreCalls() {
    BatchExecutor<String> executor = BatchExecutor.<String>builder(once, (m, attempt) -> {
      nanos.addAndGet(Duration.ofMillis(10).toNanos());
    }).scope("orders").key(m -> m).build();

    BatchOutcome<String> outcome = executor.process(List.of("r1", "r2"));

    assertThat(outcome.items()).hasSize(2);
    assertThat(recorder.named()).containsExactly(
        "c1 started r1 token=-1 attempt=0",
        "c2 started r2 token=-1 attempt=0",
        "c1 store claimAll 0ms ok",
        "c2 store claimAll 0ms ok",
        "c1 acquired attempt=1",
        "c2 acquired attempt=1",
        "c1 store completeAll 0ms ok",
        "c2 store completeAll 0ms ok",
        "c1 ended COMPLETED 20ms",
        "c2 ended COMPLETED 20ms");
  }

  @Test
  void theOldEventsAreStillToldAndTimedOnTheTicker() {
    List<String> old = new CopyOnWriteArrayList<>();
    Once classic = once.toBuilder().listener(new OnceListener() {
      @Override
      public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
        old.add("acquired " + key.key());
      }

      @Override
      public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
        old.add("completed " + elapsed.toMillis() + "ms");
      }

      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        old.add(operation + " " + elapsed.toMillis() + "ms");
      }
    }).build();

    classic.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"), Codecs.utf8(),
        attempt -> {
          nanos.addAndGet(Duration.ofMillis(7).toNanos());
          return "v";
        });

    assertThat(old).containsExactly("claim 0ms", "acquired k1", "complete 0ms", "completed 7ms");
  }

  // A failure's call ends once its failure is settled, as the settling came to; nothing of the
  // call is told after its end (issue 25 review).

  /** The failure events and the call's start and end, as text. */
  final List<String> failureEvents = new CopyOnWriteArrayList<>();
  final OnceListener failureRecorder = new OnceListener() {
    @Override
    public void onCallStarted(Call call) {
      failureEvents.add("started");
    }

    @Override
    public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
      failureEvents.add("ended " + outcome + " failure=" + (failure == null ? null
          : failure.getClass().getSimpleName()));
    }

    @Override
    public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
      failureEvents.add("onOutcomeUnknown");
    }

    @Override
    public void onLeaseLost(IdempotencyKey key, long token) {
      failureEvents.add("onLeaseLost");
    }

    @Override
    public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
      failureEvents.add("onFailed terminal=" + terminal);
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
            return m.invoke(store, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  @Test
  void aTerminalFailureTheStoreCannotWriteDownEndsOutcomeUnknownAfterItsOnOutcomeUnknown() {
    Once refused = Once.builder(refusing("complete")).ticker(nanos::get)
        .listener(failureRecorder).sleeper(d -> {})
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    assertThatThrownBy(() -> refused.execute(IdempotencyKey.of("p", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw new IllegalArgumentException("declined");
        })).isInstanceOf(IllegalArgumentException.class);

    assertThat(failureEvents).containsExactly("started", "onFailed terminal=true",
        "onOutcomeUnknown", "ended OUTCOME_UNKNOWN failure=StoreUnavailableException");
  }

  @Test
  void aRetryableFailureWhoseReleaseTheStoreRefusesEndsOutcomeUnknownLast() {
    Once refused = Once.builder(refusing("fail")).ticker(nanos::get).listener(failureRecorder)
        .sleeper(d -> {}).build();
    assertThatThrownBy(() -> refused.execute(IdempotencyKey.of("p", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw new IllegalStateException("gateway down");
        })).isInstanceOf(IllegalStateException.class);

    assertThat(failureEvents).containsExactly("started", "onFailed terminal=false",
        "onOutcomeUnknown", "ended OUTCOME_UNKNOWN failure=StoreUnavailableException");
  }

  @Test
  void aTerminalFailureWrittenDownEndsFailedTerminalLast() {
    Once plain = Once.builder(store).ticker(nanos::get).listener(failureRecorder)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    assertThatThrownBy(() -> plain.execute(IdempotencyKey.of("p", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw new IllegalArgumentException("declined");
        })).isInstanceOf(IllegalArgumentException.class);

    assertThat(failureEvents).containsExactly("started", "onFailed terminal=true",
        "ended FAILED_TERMINAL failure=IllegalArgumentException");
  }

  @Test
  void aBatchEndedByAnErrorEndsTheMessageInHandInItAndTheMessagesNeverReachedNotRun() {
    Once plain = Once.builder(store).ticker(nanos::get).listener(failureRecorder).build();
    BatchExecutor<String> executor = BatchExecutor.<String>builder(plain, (m, attempt) -> {
      if (m.equals("boom")) {
        throw new AssertionError("fatal");
      }
    }).scope("orders").key(m -> m).build();

    assertThatThrownBy(() -> executor.process(List.of("boom", "next")))
        .isInstanceOf(AssertionError.class);

    assertThat(failureEvents).containsExactly("started", "started",
        "ended ERROR failure=AssertionError", "ended NOT_RUN failure=null");
  }

  @Test
  void aBatchEndedByAnErrorEndsItsHandledMessagesWhoseOutcomesTheStoreRefusedOutcomeUnknown() {
    Once refused = Once.builder(refusing("completeAll")).ticker(nanos::get)
        .listener(failureRecorder).sleeper(d -> {}).build();
    BatchExecutor<String> executor = BatchExecutor.<String>builder(refused, (m, attempt) -> {
      if (m.equals("boom")) {
        throw new AssertionError("fatal");
      }
    }).scope("orders").key(m -> m).build();

    assertThatThrownBy(() -> executor.process(List.of("done", "boom", "next")))
        .isInstanceOf(AssertionError.class);

    assertThat(failureEvents).containsExactly("started", "started", "started",
        "ended ERROR failure=AssertionError",
        "ended OUTCOME_UNKNOWN failure=StoreUnavailableException",
        "ended NOT_RUN failure=null");
  }

  String run(String key, String body) {
    return once.execute(IdempotencyKey.of("payments", key), Fingerprint.of(body), Codecs.utf8(),
        attempt -> "done " + body);
  }
}
