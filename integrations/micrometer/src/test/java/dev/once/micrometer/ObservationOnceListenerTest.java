package dev.once.micrometer;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.testkit.ManualClock;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Real executions over {@link InMemoryStore}, observed into a {@link TestObservationRegistry}
 * (which also validates each observation's lifecycle: started once, events before the stop,
 * stopped once).
 */
class ObservationOnceListenerTest {

  static final Duration LEASE = Duration.ofSeconds(30);

  final TestObservationRegistry registry = TestObservationRegistry.create();
  final Recorder recorder = new Recorder();
  final InMemoryStore store = new InMemoryStore();
  final ManualClock clock = new ManualClock();
  final ObservationOnceListener listener = ObservationOnceListener.of(registry, store);
  final Once once = Once.builder(store).lease(LEASE).clock(clock).listener(listener)
      .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
      .build();

  ObservationOnceListenerTest() {
    registry.observationConfig().observationHandler(recorder);
  }

  /** Every Once observation in start order, with the events each got. */
  static final class Recorder implements ObservationHandler<OnceObservationContext> {
    final List<OnceObservationContext> contexts = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onStart(OnceObservationContext context) {
      contexts.add(context);
    }

    @Override
    public void onEvent(Observation.Event event, OnceObservationContext context) {
      events(context).add(event.getName());
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
      return context instanceof OnceObservationContext;
    }

    static List<String> events(Observation.Context context) {
      return context.computeIfAbsent("events",
          k -> Collections.synchronizedList(new ArrayList<String>()));
    }

    OnceObservationContext only(String outcome) {
      List<OnceObservationContext> found = contexts.stream()
          .filter(c -> c.outcome().equals(outcome)).toList();
      assertThat(found).as("observations with outcome " + outcome).hasSize(1);
      return found.get(0);
    }
  }

  String run(String key, String body) {
    return once.execute(IdempotencyKey.of("payments", key), Fingerprint.of(body), Codecs.utf8(),
        attempt -> "done " + body);
  }

  static void await(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("latch never released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Test
  void anExecutionIsOneObservationUnderTheCurrentOneWithItsStoreCallsAsEvents() {
    Observation.createNotStarted("http.server.requests", registry).observe(() -> run("k1", "a"));

    assertThat(registry)
        .hasObservationWithNameEqualTo(OnceObservations.EXECUTION).that()
        .hasContextualNameEqualTo("once payments")
        .hasLowCardinalityKeyValue(OnceObservations.SCOPE, "payments")
        .hasLowCardinalityKeyValue(OnceObservations.STORE, "inmemory")
        .hasLowCardinalityKeyValue(OnceObservations.OUTCOME, OnceObservations.COMPLETED)
        .hasHighCardinalityKeyValue(OnceObservations.KEY, "k1")
        .hasHighCardinalityKeyValueWithKey(OnceObservations.TOKEN)
        .hasParentObservationContextMatching(
            parent -> parent.getName().equals("http.server.requests"))
        .hasBeenStarted()
        .hasBeenStopped();
    OnceObservationContext execution = recorder.only(OnceObservations.COMPLETED);
    assertThat(execution.getHighCardinalityKeyValue(OnceObservations.TOKEN).getValue())
        .isEqualTo(Long.toString(execution.token()));
    assertThat(Recorder.events(execution)).containsExactly("claim", "complete");
  }

  @Test
  void duplicatesAreObservedAsTheirAnswers() {
    run("k1", "a");
    run("k1", "a");
    assertThatThrownBy(() -> run("k1", "b")).isInstanceOf(KeyReusedException.class);

    assertThat(registry).hasNumberOfObservationsWithNameEqualTo(OnceObservations.EXECUTION, 3);
    OnceObservationContext replay = recorder.only(OnceObservations.REPLAYED);
    assertThat(replay.token()).isEqualTo(-1);
    assertThat(replay.getHighCardinalityKeyValue(OnceObservations.TOKEN)).isNull();
    assertThat(Recorder.events(replay)).containsExactly("claim");
    assertThat(Recorder.events(recorder.only(OnceObservations.MISMATCH)))
        .containsExactly("claim");
  }

  @Test
  void aDuplicateOfARunningCallIsInProgress() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> original = CompletableFuture.supplyAsync(() ->
        once.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"), Codecs.utf8(),
            attempt -> {
              entered.countDown();
              await(release);
              return "done";
            }));
    await(entered);
    assertThatThrownBy(() -> run("k1", "a")).isInstanceOf(RequestInProgressException.class);
    release.countDown();
    original.get(10, TimeUnit.SECONDS);

    recorder.only(OnceObservations.IN_PROGRESS);
    recorder.only(OnceObservations.COMPLETED);
  }

  @Test
  void failuresEndTheirObservationWithTheError() {
    IllegalStateException retryable = new IllegalStateException("gateway down");
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw retryable;
        })).isSameAs(retryable);
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("payments", "k2"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          throw new IllegalArgumentException("card declined");
        })).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> run("k2", "a")).isInstanceOf(ReplayedFailureException.class);

    OnceObservationContext failed = recorder.only(OnceObservations.FAILED);
    assertThat(failed.getError()).isSameAs(retryable);
    assertThat(recorder.only(OnceObservations.FAILED_TERMINAL).getError())
        .hasMessage("card declined");
    recorder.only(OnceObservations.REPLAYED);
    // The release is written after onFailed: it is not an event of the ended observation.
    assertThat(Recorder.events(failed)).containsExactly("claim");
  }

  @Test
  void aNestedCallIsItsOwnObservationAndItsReleaseIsNotTheOuterOnes() {
    String result = once.execute(IdempotencyKey.of("orders", "outer"), Fingerprint.of("o"),
        Codecs.utf8(), attempt -> {
          assertThatThrownBy(() -> once.execute(IdempotencyKey.of("payments", "inner"),
              Fingerprint.of("i"), Codecs.utf8(), inner -> {
                throw new IllegalStateException("inner failed");
              })).hasMessage("inner failed");
          return "outer done";
        });

    assertThat(result).isEqualTo("outer done");
    OnceObservationContext outer = recorder.only(OnceObservations.COMPLETED);
    assertThat(outer.key().key()).isEqualTo("outer");
    assertThat(Recorder.events(outer)).containsExactly("claim", "complete");
    OnceObservationContext inner = recorder.only(OnceObservations.FAILED);
    assertThat(Recorder.events(inner)).containsExactly("claim");
  }

  @Test
  void aTakeoverAndTheLeaseLostByTheStalledWorker() throws Exception {
    IdempotencyKey key = IdempotencyKey.of("payments", "k1");
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> stalled = CompletableFuture.supplyAsync(() ->
        once.execute(key, Fingerprint.of("a"), Codecs.utf8(), attempt -> {
          entered.countDown();
          await(release);
          return "late";
        }));
    await(entered);
    clock.advance(LEASE.plusSeconds(1));
    run("k1", "a");
    release.countDown();
    assertThatThrownBy(stalled::join).hasCauseInstanceOf(LeaseLostException.class);

    OnceObservationContext takeover = recorder.only(OnceObservations.COMPLETED);
    assertThat(Recorder.events(takeover)).containsExactly("claim", "takeover", "complete");
    OnceObservationContext zombie = recorder.only(OnceObservations.LEASE_LOST);
    assertThat(zombie.token()).isLessThan(takeover.token());
  }

  @Test
  void aResultThatCannotBeStoredEndsNotStored() {
    Once bounded = once.toBuilder().maxPayloadBytes(16).build();
    IdempotencyKey key = IdempotencyKey.of("payments", "big");
    bounded.execute(key, Fingerprint.of("a"), Codecs.utf8(), attempt -> "x".repeat(100));
    assertThatThrownBy(() -> bounded.execute(key, Fingerprint.of("a"), Codecs.utf8(),
        attempt -> "again")).isInstanceOf(OutcomeNotStoredException.class);

    OnceObservationContext notStored = recorder.only(OnceObservations.NOT_STORED);
    assertThat(Recorder.events(notStored)).containsExactly("claim", "not_stored", "complete");
    recorder.only(OnceObservations.REPLAYED);
  }

  /** A call as an engine tells it: a fresh id, the key, and once acquired its token. */
  static OnceListener.Call call(long id, IdempotencyKey key, long token) {
    return new OnceListener.Call(id, key, token, token < 0 ? 0 : 1);
  }

  @Test
  void executionsThatEndOutOfOrderAreMatchedByTheirCall() {
    // A Kafka batch: one claimAll, each record's work in turn, one completeAll, then the ends.
    IdempotencyKey first = IdempotencyKey.of("orders", "r1");
    IdempotencyKey second = IdempotencyKey.of("orders", "r2");
    listener.onCallStarted(call(1, first, -1));
    listener.onCallStarted(call(2, second, -1));
    listener.onStoreCall(call(1, first, -1), "claimAll", Duration.ofMillis(2), true);
    listener.onStoreCall(call(2, second, -1), "claimAll", Duration.ofMillis(2), true);
    listener.onCallAcquired(call(1, first, 1), false, Duration.ZERO);
    listener.onCallAcquired(call(2, second, 1), false, Duration.ZERO);
    listener.onStoreCall(call(2, second, 1), "completeAll", Duration.ofMillis(3), true);
    listener.onCallEnded(call(2, second, 1), OnceListener.CallOutcome.COMPLETED,
        Duration.ofMillis(8), null);
    listener.onCallEnded(call(1, first, 1), OnceListener.CallOutcome.FAILED,
        Duration.ofMillis(9), new IllegalStateException("r1 failed"));

    assertThat(registry).hasNumberOfObservationsWithNameEqualTo(OnceObservations.EXECUTION, 2);
    OnceObservationContext r1 = recorder.only(OnceObservations.FAILED);
    assertThat(r1.key()).isEqualTo(first);
    assertThat(r1.getError()).hasMessage("r1 failed");
    assertThat(Recorder.events(r1)).containsExactly("claimAll");
    OnceObservationContext r2 = recorder.only(OnceObservations.COMPLETED);
    assertThat(r2.key()).isEqualTo(second);
    assertThat(Recorder.events(r2)).containsExactly("claimAll", "completeAll");
  }

  @Test
  void everyMessageOfABatchIsAnObservationWithTheBatchStoreCallsAsEvents() {
    dev.once.batch.BatchExecutor<String> executor = dev.once.batch.BatchExecutor
        .<String>builder(once, (message, attempt) -> { }).scope("orders").key(m -> m).build();

    Observation.createNotStarted("kafka.receive", registry)
        .observe(() -> executor.process(List.of("r1", "r2")));

    assertThat(registry).hasNumberOfObservationsWithNameEqualTo(OnceObservations.EXECUTION, 2);
    assertThat(recorder.contexts).hasSize(2);
    for (OnceObservationContext message : recorder.contexts) {
      assertThat(message.outcome()).isEqualTo(OnceObservations.COMPLETED);
      assertThat(message.getParentObservation().getContextView().getName())
          .isEqualTo("kafka.receive");
      assertThat(Recorder.events(message)).containsExactly("claimAll", "completeAll");
    }
  }

  @Test
  void heartbeatEventsFromAnotherThreadReachTheRunningExecution() throws Exception {
    IdempotencyKey key = IdempotencyKey.of("payments", "k1");
    listener.onCallStarted(call(1, key, -1));
    listener.onStoreCall(call(1, key, -1), "claim", Duration.ofMillis(1), true);
    listener.onCallAcquired(call(1, key, 7), false, Duration.ZERO);
    Thread beat = new Thread(() -> {
      listener.onStoreCall("extend", Duration.ofMillis(1), false);
      listener.onHeartbeatFailed(key, 7, new IllegalStateException("store down"));
      listener.onLeaseLost(key, 7);
    });
    beat.start();
    beat.join();
    OnceObservationContext running = recorder.contexts.get(0);
    assertThat(running.outcome()).isEqualTo(OnceObservations.ACQUIRED);
    listener.onLeaseLost(key, 7);
    listener.onCallEnded(call(1, key, 7), OnceListener.CallOutcome.LEASE_LOST,
        Duration.ofMillis(5), null);

    assertThat(running.outcome()).isEqualTo(OnceObservations.LEASE_LOST);
    assertThat(Recorder.events(running))
        .containsExactly("claim", "heartbeat_failed", "lease_lost");
    assertThat(registry).hasSingleObservationThat().hasBeenStopped();
  }

  @Test
  void aClaimThatFailsMakesNoObservationAndIsNotCarriedToTheNextCall() {
    IdempotencyKey key = IdempotencyKey.of("payments", "k0");
    listener.onCallStarted(call(1, key, -1));
    listener.onStoreCall(call(1, key, -1), "claim", Duration.ofMillis(1), false); // store down
    listener.onCallEnded(call(1, key, -1), OnceListener.CallOutcome.NOT_RUN,
        Duration.ofMillis(1), new IllegalStateException("store down"));
    run("k1", "a"); // the next call, on the same thread, at once: no time needs to pass

    assertThat(registry).hasNumberOfObservationsWithNameEqualTo(OnceObservations.EXECUTION, 1);
    assertThat(Recorder.events(recorder.only(OnceObservations.COMPLETED)))
        .containsExactly("claim", "complete");
  }

  @Test
  void aClaimRetriedAtOnceIsPartOfTheSameCall() {
    // TransactionalOnce retries a claim that hit a deadlock, then answers.
    IdempotencyKey key = IdempotencyKey.of("payments", "k1");
    listener.onCallStarted(call(1, key, -1));
    listener.onStoreCall(call(1, key, -1), "claim", Duration.ofMillis(1), false);
    listener.onStoreCall(call(1, key, -1), "claim", Duration.ofMillis(1), true);
    listener.onCallEnded(call(1, key, -1), OnceListener.CallOutcome.IN_PROGRESS,
        Duration.ofMillis(2), null);

    assertThat(Recorder.events(recorder.only(OnceObservations.IN_PROGRESS)))
        .containsExactly("claim", "claim");
  }

  @Test
  void aCallThatHeldItsClaimAndEndedWithoutAnOutcomeIsAbandoned() {
    IdempotencyKey key = IdempotencyKey.of("orders", "r1");
    listener.onCallStarted(call(1, key, -1));
    listener.onCallAcquired(call(1, key, 3), false, Duration.ZERO);
    listener.onCallEnded(call(1, key, 3), OnceListener.CallOutcome.NOT_RUN, Duration.ZERO, null);

    assertThat(recorder.only(OnceObservations.ABANDONED).token()).isEqualTo(3);
    assertThat(registry).hasSingleObservationThat().hasBeenStopped();
  }

  @Test
  void eventsOfACallNeverStartedAreIgnored() {
    IdempotencyKey key = IdempotencyKey.of("orders", "r1");
    listener.onStoreCall(call(9, key, -1), "claim", Duration.ZERO, true);
    listener.onCallAcquired(call(9, key, 1), false, Duration.ZERO);
    listener.onCallEnded(call(9, key, 1), OnceListener.CallOutcome.COMPLETED, Duration.ZERO, null);
    listener.onHeartbeatFailed(key, 1, new IllegalStateException("x"));

    assertThat(registry).doesNotHaveAnyObservation();
  }

  @Test
  void composedWithTheMetricsListenerBothSeeEveryCall() {
    io.micrometer.core.instrument.simple.SimpleMeterRegistry meters =
        new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    Once both = once.toBuilder().listener(OnceListener.compose(
        MicrometerOnceListener.of(meters, store), listener)).build();
    both.execute(IdempotencyKey.of("payments", "k9"), Fingerprint.of("a"), Codecs.utf8(),
        attempt -> "v");

    assertThat(meters.get(OnceMetrics.OUTCOMES).tag(OnceMetrics.TAG_OUTCOME, "completed")
        .counter().count()).isEqualTo(1.0);
    recorder.only(OnceObservations.COMPLETED);
  }

  @Test
  void aCustomConventionNamesTheObservation() {
    ObservationOnceListener custom = ObservationOnceListener.builder(registry).storeName("pg")
        .convention(new DefaultOnceObservationConvention(false) {
          @Override
          public String getContextualName(OnceObservationContext context) {
            return "idempotent " + context.key().key();
          }
        }).build();
    once.toBuilder().listener(custom).build().execute(IdempotencyKey.of("payments", "k5"),
        Fingerprint.of("a"), Codecs.utf8(), attempt -> "v");

    assertThat(registry).hasSingleObservationThat()
        .hasContextualNameEqualTo("idempotent k5")
        .hasLowCardinalityKeyValue(OnceObservations.SCOPE, "all")
        .hasLowCardinalityKeyValue(OnceObservations.STORE, "pg");
  }

  @Test
  void aNoopRegistryCostsNothingAndRecordsNothing() {
    ObservationOnceListener noop = ObservationOnceListener.of(ObservationRegistry.NOOP, store);
    Once quiet = once.toBuilder().listener(noop).build();
    quiet.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"), Codecs.utf8(),
        attempt -> "v");
    quiet.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"), Codecs.utf8(),
        attempt -> "v");

    assertThat(registry).doesNotHaveAnyObservation();
  }
}
