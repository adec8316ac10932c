package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link Once#callAsync}: the blocking call's semantics without blocking its caller. Most tests
 * run the engine's tasks by hand ({@link HandExecutor}), so each says exactly what ran where: the
 * caller's thread returns before the store is touched, and the work's stage completes when the
 * test says.
 */
class OnceAsyncTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("body");
  private final ManualClock clock = new ManualClock();
  private final InMemoryStore store = new InMemoryStore();
  private final IdempotencyKey key = IdempotencyKey.of("payments.charge", "evt-1");
  private final HandExecutor executor = new HandExecutor();
  private final AtomicInteger runs = new AtomicInteger();

  private Once.Builder builder() {
    return Once.builder(store).clock(clock).lease(LEASE).asyncExecutor(executor);
  }

  private AsyncWork<String> charge(CompletableFuture<String> stage) {
    return attempt -> {
      runs.incrementAndGet();
      return stage;
    };
  }

  private IdempotencyRecord record() {
    return store.find(key).orElseThrow();
  }

  @Test
  void theCallerReturnsBeforeTheStoreIsTouchedAndTheOutcomeIsStoredWhenTheStageCompletes() {
    Once once = builder().build();
    CompletableFuture<String> stage = new CompletableFuture<>();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(stage));

    assertThat(store.find(key)).as("nothing claimed on the caller's thread").isEmpty();
    executor.runAll(); // the claim, then the work, which returns its pending stage
    assertThat(runs).hasValue(1);
    assertThat(record().status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(answer).isNotDone();

    stage.complete("charged");
    assertThat(record().status()).as("stored on the executor, not on the completing thread")
        .isEqualTo(Status.IN_PROGRESS);
    executor.runAll();

    assertThat(answer).isCompleted();
    Result<String> result = answer.join();
    assertThat(result.value()).isEqualTo("charged");
    assertThat(result.replayed()).isFalse();
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void aDuplicateIsAnsweredFromTheStoredOutcomeByTheAsyncAndTheBlockingCall() {
    Once once = builder().build();
    CompletableFuture<Result<String>> first = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();
    assertThat(first.join().value()).isEqualTo("charged");

    CompletableFuture<Result<String>> again = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged twice")));
    executor.runAll();
    String blocking = once.execute(key, FP, Codecs.utf8(), a -> "charged twice");

    assertThat(again.join().replayed()).isTrue();
    assertThat(again.join().value()).isEqualTo("charged");
    assertThat(blocking).isEqualTo("charged");
    assertThat(runs).hasValue(1);
  }

  @Test
  void aStageThatFailsReleasesTheKeyForARetryAndAnswersTheWorksOwnException() {
    Once once = builder().build();
    IOException down = new IOException("gateway down");

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.failedFuture(down)));
    executor.runAll();

    assertThat(answer).isCompletedExceptionally();
    assertThatThrownBy(answer::join).isInstanceOf(CompletionException.class).hasCause(down);
    assertThat(record().status()).isEqualTo(Status.FAILED);
    assertThat(record().lastError()).isEqualTo("java.io.IOException: gateway down");

    CompletableFuture<Result<String>> retry = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();
    assertThat(retry.join().value()).isEqualTo("charged");
    assertThat(runs).hasValue(2);
  }

  @Test
  void aFailureOfADependentStageIsTheWorksOwnExceptionUnwrapped() {
    Once once = builder().build();
    IllegalStateException declined = new IllegalStateException("declined");
    CompletableFuture<String> source = new CompletableFuture<>();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        attempt -> source.thenApply(s -> {
          throw declined;
        }));
    executor.runAll();
    source.complete("x");
    executor.runAll();

    assertThatThrownBy(answer::join).hasCause(declined);
    assertThat(record().lastError()).startsWith("java.lang.IllegalStateException: declined");
  }

  @Test
  void aTerminalFailureIsStoredAndReplayedToDuplicates() {
    Once once = builder()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.failedFuture(new IllegalArgumentException("card declined"))));
    executor.runAll();
    assertThatThrownBy(answer::join).hasCauseInstanceOf(IllegalArgumentException.class);

    CompletableFuture<Result<String>> duplicate = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();
    assertThatThrownBy(duplicate::join).hasCauseInstanceOf(ReplayedFailureException.class);
    assertThat(runs).hasValue(1);
  }

  @Test
  void workThatThrowsBeforeReturningAStageFailsLikeAFailedStage() {
    Once once = builder().build();
    IOException early = new IOException("no connection");

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(), a -> {
      throw early;
    });
    executor.runAll();

    assertThatThrownBy(answer::join).hasCause(early);
    assertThat(record().status()).isEqualTo(Status.FAILED);
  }

  @Test
  void workThatReturnsNoStageFailsAndReleasesTheKey() {
    Once once = builder().build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(), a -> null);
    executor.runAll();

    assertThatThrownBy(answer::join).hasCauseInstanceOf(NullPointerException.class)
        .hasMessageContaining("returned no CompletionStage");
    assertThat(record().status()).isEqualTo(Status.FAILED);
  }

  @Test
  void cancellingTheAnswerAfterTheClaimNeitherReleasesTheClaimNorLosesTheOutcome() {
    Once once = builder().build();
    CompletableFuture<String> stage = new CompletableFuture<>();
    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(stage));
    executor.runAll();

    assertThat(answer.cancel(true)).isTrue();
    assertThat(record().status()).as("still held").isEqualTo(Status.IN_PROGRESS);
    CompletableFuture<Result<String>> meanwhile = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("again")));
    executor.runAll();
    assertThatThrownBy(meanwhile::join).hasCauseInstanceOf(RequestInProgressException.class);

    stage.complete("charged");
    executor.runAll();

    assertThat(record().status()).isEqualTo(Status.COMPLETED);
    CompletableFuture<Result<String>> duplicate = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("again")));
    executor.runAll();
    assertThat(duplicate.join().value()).isEqualTo("charged");
    assertThat(runs).hasValue(1);
  }

  @Test
  void aKeyReusedWithAnotherFingerprintIsRefused() {
    Once once = builder().build();
    once.callAsync(key, FP, Codecs.utf8(), charge(CompletableFuture.completedFuture("a")));
    executor.runAll();

    CompletableFuture<Result<String>> other = once.callAsync(key, Fingerprint.of("other body"),
        Codecs.utf8(), charge(CompletableFuture.completedFuture("b")));
    executor.runAll();

    assertThatThrownBy(other::join).hasCauseInstanceOf(KeyReusedException.class);
    assertThat(runs).hasValue(1);
  }

  @Test
  void anOutcomeTheStoreCannotTakeIsOutcomeUnknownAndTheKeyIsNotCompleted() {
    Once once = Once.builder(failingCompletions(store)).clock(clock).lease(LEASE)
        .asyncExecutor(executor).sleeper(pause -> { }).build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();

    assertThatThrownBy(answer::join).hasCauseInstanceOf(OutcomeUnknownException.class);
    assertThat(record().status()).as("the lease decides, as for a blocking call")
        .isEqualTo(Status.IN_PROGRESS);
    assertThat(runs).hasValue(1);
  }

  @Test
  void theHeartbeatKeepsTheClaimWhileTheStageIsPendingAndStopsWhenItIsStored() {
    OnceTest.ManualScheduler scheduler = new OnceTest.ManualScheduler();
    Once once = builder().heartbeat(scheduler).build();
    CompletableFuture<String> stage = new CompletableFuture<>();
    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(stage));
    executor.runAll();

    for (int beat = 0; beat < 5; beat++) {
      clock.advance(Duration.ofSeconds(10));
      scheduler.tick();
    }
    // 50 s in, past the original 30 s lease: still ours.
    assertThat(store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE,
        Duration.ofHours(1)))).isInstanceOf(Claim.InProgress.class);
    stage.complete("long work done");
    executor.runAll();

    assertThat(answer.join().value()).isEqualTo("long work done");
    assertThat(scheduler.cancelled).isTrue();
  }

  @Test
  void stepsOfAnAsyncWorkAreJournaledAndNotRunAgainByTheRetry() {
    Once once = builder().build();
    AtomicInteger charges = new AtomicInteger();
    AsyncWork<String> work = attempt -> {
      String charge = attempt.step("charge", Codecs.utf8(),
          ref -> "ch-" + charges.incrementAndGet());
      return runs.incrementAndGet() == 1
          ? CompletableFuture.failedFuture(new IOException("mail server down"))
          : CompletableFuture.completedFuture(charge + " mailed");
    };

    CompletableFuture<Result<String>> first = once.callAsync(key, FP, Codecs.utf8(), work);
    executor.runAll();
    assertThatThrownBy(first::join).hasCauseInstanceOf(IOException.class);
    CompletableFuture<Result<String>> retry = once.callAsync(key, FP, Codecs.utf8(), work);
    executor.runAll();

    assertThat(retry.join().value()).isEqualTo("ch-1 mailed");
    assertThat(charges).hasValue(1);
  }

  @Test
  void anExecutorThatRefusesClaimsNothingAndSaysSo() {
    Once once = builder().asyncExecutor(task -> {
      throw new RejectedExecutionException("shut down");
    }).build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));

    assertThatThrownBy(answer::join).hasCauseInstanceOf(RejectedExecutionException.class);
    assertThat(store.find(key)).isEmpty();
    assertThat(runs).hasValue(0);
  }

  @Test
  void anExecutorThatRefusesOnceTheClaimIsHeldStillHasTheOutcomeStored() {
    AtomicInteger accepted = new AtomicInteger();
    Executor refusingAfterTheClaim = task -> {
      if (accepted.incrementAndGet() > 1) {
        throw new RejectedExecutionException("saturated");
      }
      executor.execute(task);
    };
    java.util.concurrent.atomic.AtomicReference<String> completedOn =
        new java.util.concurrent.atomic.AtomicReference<>();
    Once once = Once.builder(overriding(store, (method, args) -> {
      if (method.startsWith("complete")) {
        completedOn.compareAndSet(null, Thread.currentThread().getName());
      }
      return FORWARD;
    })).clock(clock).lease(LEASE).asyncExecutor(refusingAfterTheClaim).build();
    CompletableFuture<String> stage = new CompletableFuture<>();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(stage));
    executor.runAll(); // the claim was accepted; what follows it is refused
    stage.complete("charged");

    assertThat(answer).succeedsWithin(Duration.ofSeconds(30))
        .satisfies(result -> assertThat(result.value()).isEqualTo("charged"));
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
    assertThat(completedOn.get()).as("on a thread of its own, not the one that completed the work")
        .isEqualTo("once-async-refused");
  }

  @Test
  void aStoreWithItsOwnAsynchronousClaimIsClaimedThroughItNeverBlocking() {
    List<String> calls = new CopyOnWriteArrayList<>();
    dev.once.spi.IdempotencyStore asyncStore = overriding(store, (method, args) -> {
      calls.add(method);
      if (method.equals("claim")) {
        throw new AssertionError("the blocking claim was called");
      }
      return method.equals("claimAsync") ? claimedAtOnce(args) : FORWARD;
    });
    Once once = Once.builder(asyncStore).clock(clock).lease(LEASE).asyncExecutor(executor)
        .build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();

    assertThat(answer.join().value()).isEqualTo("charged");
    assertThat(calls).contains("claimAsync").doesNotContain("claim");
  }

  @Test
  void aStoreWithoutAsynchronousCallsOfItsOwnTakesOneTaskPerStoreCallNotTwo() {
    AtomicInteger tasks = new AtomicInteger();
    Once once = builder().asyncExecutor(task -> {
      tasks.incrementAndGet();
      executor.execute(task);
    }).build();
    CompletableFuture<String> stage = new CompletableFuture<>();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(stage));
    executor.runAll();
    assertThat(tasks).as("the claim, and the work started from it").hasValue(1);
    stage.complete("charged");
    executor.runAll();

    assertThat(answer.join().value()).isEqualTo("charged");
    assertThat(tasks).as("then storing the outcome").hasValue(2);
  }

  @Test
  void aStoreWithItsOwnAsynchronousCompletionStoresThroughItAndTheAnswerWaitsForIt() {
    List<Object[]> completions = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> written = new CompletableFuture<>();
    dev.once.spi.IdempotencyStore asyncStore = overriding(store, (method, args) -> {
      if (method.equals("complete")) {
        throw new AssertionError("the blocking complete was called");
      }
      if (method.equals("completeAsync")) {
        completions.add(args);
        return written;
      }
      return FORWARD;
    });
    Once once = Once.builder(asyncStore).clock(clock).lease(LEASE).asyncExecutor(executor)
        .build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();
    assertThat(completions).hasSize(1);
    assertThat(answer).as("held until the store says the outcome is stored").isNotDone();

    Object[] c = completions.get(0);
    store.complete((IdempotencyKey) c[0], (long) c[1], (dev.once.spi.Outcome) c[2],
        (Instant) c[3], (Duration) c[4]);
    written.complete(null);
    assertThat(answer).as("told on the executor, not on the store's thread").isNotDone();
    executor.runAll();

    assertThat(answer.join().value()).isEqualTo("charged");
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void anAsynchronousCompletionThatFailsIsRetriedAsTheBlockingCallRetries() {
    List<String> calls = new CopyOnWriteArrayList<>();
    List<Duration> pauses = new CopyOnWriteArrayList<>();
    dev.once.spi.IdempotencyStore asyncStore = overriding(store, (method, args) -> {
      calls.add(method);
      return method.equals("completeAsync") ? CompletableFuture.failedFuture(
          new StoreUnavailableException("connection reset", null, true)) : FORWARD;
    });
    Once once = Once.builder(asyncStore).clock(clock).lease(LEASE).asyncExecutor(executor)
        .sleeper(pauses::add).build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();

    assertThat(answer.join().value()).isEqualTo("charged");
    assertThat(calls).containsSubsequence("completeAsync", "complete");
    assertThat(pauses).as("after the first pause, as a blocking call's retry").hasSize(1);
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void anAsynchronousCompletionRefusedForALostLeaseAnswersLeaseLostAndIsNotRetried() {
    List<String> calls = new CopyOnWriteArrayList<>();
    dev.once.spi.IdempotencyStore asyncStore = overriding(store, (method, args) -> {
      calls.add(method);
      return method.equals("completeAsync") ? CompletableFuture.failedFuture(
          new LeaseLostException((IdempotencyKey) args[0], (long) args[1])) : FORWARD;
    });
    Once once = Once.builder(asyncStore).clock(clock).lease(LEASE).asyncExecutor(executor)
        .build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();

    assertThatThrownBy(answer::join).hasCauseInstanceOf(LeaseLostException.class);
    assertThat(calls).contains("completeAsync").doesNotContain("complete");
    assertThat(runs).hasValue(1);
  }

  @Test
  void aClaimAnsweredAtOnceIsToldOnTheExecutorNeverOnTheCallersThread() throws Exception {
    // A native asynchronous claim may answer before the caller returns (here: at once); the
    // listener must still not hear of it on the caller's thread, an event loop in WebFlux.
    dev.once.spi.IdempotencyStore answersAtOnce = overriding(store,
        (method, args) -> method.equals("claimAsync") ? claimedAtOnce(args) : FORWARD);
    List<String> toldOn = new CopyOnWriteArrayList<>();
    ExecutorService pool = Executors.newSingleThreadExecutor(r -> new Thread(r, "store-thread"));
    try {
      Once once = Once.builder(answersAtOnce).clock(clock).lease(LEASE).asyncExecutor(pool)
          .listener(new OnceListener() {
            @Override
            public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
              toldOn.add(operation + " on " + Thread.currentThread().getName());
            }
          }).build();

      once.callAsync(key, FP, Codecs.utf8(), charge(CompletableFuture.completedFuture("charged")))
          .get(30, TimeUnit.SECONDS);

      assertThat(toldOn).contains("claim on store-thread")
          .allSatisfy(told -> assertThat(told).endsWith("on store-thread"));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theListenerHearsTheCallFromItsStartToItsEndAsForABlockingCall() {
    List<String> events = new CopyOnWriteArrayList<>();
    Once once = builder().listener(new OnceListener() {
      @Override
      public void onCallStarted(Call call) {
        events.add("started");
      }

      @Override
      public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
        events.add("acquired " + call.token());
      }

      @Override
      public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed,
          Throwable failure) {
        events.add("ended " + outcome);
      }
    }).build();

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();
    long token = answer.join().token();
    once.callAsync(key, FP, Codecs.utf8(), charge(CompletableFuture.completedFuture("x")));
    executor.runAll();

    assertThat(events).containsExactly("started", "acquired " + token, "ended COMPLETED",
        "started", "ended REPLAYED");
  }

  @Test
  void executeAsyncAnswersTheValue() {
    Once once = builder().build();

    CompletableFuture<String> answer = once.executeAsync(key, FP, Codecs.utf8(),
        charge(CompletableFuture.completedFuture("charged")));
    executor.runAll();

    assertThat(answer.join()).isEqualTo("charged");
  }

  @Test
  void onTheDefaultExecutorConcurrentCallersOfOneKeyRunItOnce() throws Exception {
    Once once = Once.builder(store).lease(LEASE).build(); // the default executor, real threads
    ExecutorService callers = Executors.newFixedThreadPool(8);
    try {
      List<CompletableFuture<Result<String>>> answers = new CopyOnWriteArrayList<>();
      CompletableFuture<Void> go = new CompletableFuture<>();
      for (int i = 0; i < 8; i++) {
        callers.execute(() -> {
          go.join();
          answers.add(once.callAsync(key, FP, Codecs.utf8(),
              a -> CompletableFuture.supplyAsync(() -> "charged " + runs.incrementAndGet())));
        });
      }
      go.complete(null);
      callers.shutdown();
      assertThat(callers.awaitTermination(30, TimeUnit.SECONDS)).isTrue();

      int completed = 0;
      for (CompletableFuture<Result<String>> answer : answers) {
        try {
          assertThat(answer.get(30, TimeUnit.SECONDS).value()).isEqualTo("charged 1");
          completed++;
        } catch (java.util.concurrent.ExecutionException e) {
          assertThat(e.getCause()).isInstanceOf(RequestInProgressException.class);
        }
      }
      assertThat(answers).hasSize(8);
      assertThat(completed).isPositive();
      assertThat(runs).hasValue(1);
      assertThat(record().status()).isEqualTo(Status.COMPLETED);
    } finally {
      callers.shutdownNow();
    }
  }

  /** An executor whose tasks the test runs, on its own thread, when it says. */
  static final class HandExecutor implements Executor {
    private final Queue<Runnable> tasks = new ArrayDeque<>();

    @Override
    public synchronized void execute(Runnable task) {
      tasks.add(task);
    }

    /** Runs every task, those the tasks queue included, until none is left. */
    void runAll() {
      for (Runnable task = next(); task != null; task = next()) {
        task.run();
      }
    }

    private synchronized Runnable next() {
      return tasks.poll();
    }
  }

  /** {@code store}, its completions failing as an outage would, nothing written. */
  static dev.once.spi.IdempotencyStore failingCompletions(InMemoryStore store) {
    return overriding(store, (method, args) -> {
      if (method.startsWith("complete")) {
        throw new StoreUnavailableException("connection reset", null, false);
      }
      return FORWARD;
    });
  }

  /** What a {@link StoreCallOverride} returns to leave a call to the store underneath. */
  static final Object FORWARD = new Object();

  /** Answers a store call by its method's name, or returns {@link #FORWARD}. */
  interface StoreCallOverride {
    Object answer(String method, Object[] args) throws Throwable;
  }

  /** {@code store}, each call first offered to {@code override}. */
  static dev.once.spi.IdempotencyStore overriding(dev.once.spi.IdempotencyStore store,
      StoreCallOverride override) {
    return (dev.once.spi.IdempotencyStore) java.lang.reflect.Proxy.newProxyInstance(
        dev.once.spi.IdempotencyStore.class.getClassLoader(),
        new Class<?>[] {dev.once.spi.IdempotencyStore.class}, (proxy, method, args) -> {
          Object answer = override.answer(method.getName(), args);
          if (answer != FORWARD) {
            return answer;
          }
          try {
            return method.invoke(store, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /** A native asynchronous claim that answers at once, deciding through the in-memory store. */
  private CompletableFuture<dev.once.spi.Claim> claimedAtOnce(Object[] args) {
    return CompletableFuture.completedFuture(store.claim((ClaimRequest) args[0]));
  }
}
