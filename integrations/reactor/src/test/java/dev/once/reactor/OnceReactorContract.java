package dev.once.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.util.context.Context;

/**
 * {@link OnceReactor} on a real store, one subclass per store. Most tests run the engine's tasks
 * by hand ({@link HandExecutor}) on a {@link ManualClock}, so each says exactly when the claim is
 * made and the outcome stored; the thread tests run on real threads and Reactor's schedulers.
 */
abstract class OnceReactorContract {

  static final Duration LEASE = Duration.ofSeconds(30);
  static final Fingerprint FP = Fingerprint.of("body");

  final ManualClock clock = new ManualClock();
  final HandExecutor executor = new HandExecutor();
  final IdempotencyKey key = IdempotencyKey.of("reactor.charge", UUID.randomUUID().toString());
  final AtomicInteger runs = new AtomicInteger();
  private ExecutorService threads;

  /**
   * A verification that waits for a signal that never comes fails after this long instead of
   * hanging the build (an answer that slipped past a hand-stepped executor, say).
   */
  @org.junit.jupiter.api.BeforeAll
  static void verificationsTimeOut() {
    StepVerifier.setDefaultTimeout(Duration.ofSeconds(30));
  }

  @org.junit.jupiter.api.AfterAll
  static void verificationsWaitAsBefore() {
    StepVerifier.resetDefaultTimeout();
  }

  /** The store under test, shared by the tests (each works on keys of its own). */
  protected abstract IdempotencyStore store();

  Once.Builder builder() {
    return Once.builder(store()).clock(clock).lease(LEASE).asyncExecutor(executor);
  }

  OnceReactor reactor() {
    return OnceReactor.of(builder().build());
  }

  ReactiveWork<String> charge(Mono<String> mono) {
    return attempt -> {
      runs.incrementAndGet();
      return mono;
    };
  }

  IdempotencyRecord record() {
    return store().find(key).orElseThrow();
  }

  @AfterEach
  void stopThreads() {
    if (threads != null) {
      threads.shutdownNow();
    }
  }

  @Test
  void nothingIsClaimedUntilSubscriptionAndEachSubscriptionIsOneCall() {
    OnceReactor onceReactor = reactor();

    Mono<Result<String>> call = onceReactor.call(key, FP, Codecs.utf8(),
        charge(Mono.just("charged")));

    assertThat(executor.pending()).as("no call made").isZero();
    assertThat(store().find(key)).isEmpty();
    assertThat(runs).hasValue(0);

    StepVerifier.create(call).then(executor::runAll)
        .assertNext(r -> {
          assertThat(r.value()).isEqualTo("charged");
          assertThat(r.replayed()).isFalse();
        }).verifyComplete();
    // The same Mono, subscribed again: another call, answered from the store.
    StepVerifier.create(call).then(executor::runAll)
        .assertNext(r -> {
          assertThat(r.value()).isEqualTo("charged");
          assertThat(r.replayed()).isTrue();
          assertThat(r.token()).isEqualTo(record().token());
        }).verifyComplete();
    assertThat(runs).hasValue(1);
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void anEmptyMonoIsAStoredEmptyResultReplayedEmptyAndNeverRunAgain() {
    OnceReactor onceReactor = reactor();
    Sinks.Empty<String> later = Sinks.empty();

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(later.asMono())))
        .then(executor::runAll)
        .then(() -> assertThat(record().status()).isEqualTo(Status.IN_PROGRESS))
        .then(later::tryEmitEmpty)
        .then(executor::runAll)
        .verifyComplete();

    assertThat(record().status()).isEqualTo(Status.COMPLETED);
    assertThat(new String(record().outcome().body(), StandardCharsets.US_ASCII))
        .isEqualTo("\0ome"); // NUL, "om", the empty tag
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(),
            charge(Mono.just("would run again"))))
        .then(executor::runAll).verifyComplete();
    StepVerifier.create(onceReactor.call(key, FP, Codecs.utf8(), charge(Mono.just("again"))))
        .then(executor::runAll)
        .assertNext(r -> {
          assertThat(r.value()).as("empty").isNull();
          assertThat(r.replayed()).isTrue();
        }).verifyComplete();
    assertThat(runs).hasValue(1);
  }

  @Test
  void aValueThatEncodesToNoBytesReplaysAsThatValueNotAsEmpty() {
    OnceReactor onceReactor = reactor();

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just(""))))
        .then(executor::runAll).expectNext("").verifyComplete();
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll).expectNext("").verifyComplete();

    assertThat(runs).hasValue(1);
  }

  @Test
  void monoVoidWorkRunsItsEffectOnceAndItsDuplicatesCompleteEmpty() {
    OnceReactor onceReactor = reactor();
    AtomicInteger mailed = new AtomicInteger();
    ReactiveWork<Void> mail = attempt -> Mono.fromRunnable(mailed::incrementAndGet);

    for (int delivery = 0; delivery < 3; delivery++) {
      StepVerifier.create(onceReactor.execute(key, FP, Codecs.none(), mail))
          .then(executor::runAll).verifyComplete();
    }

    assertThat(mailed).hasValue(1);
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void aRetryableErrorReachesTheSubscriberUnwrappedAndReleasesTheKey() {
    OnceReactor onceReactor = reactor();
    IOException down = new IOException("gateway down");

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.error(down))))
        .then(executor::runAll)
        .expectErrorSatisfies(e -> assertThat(e).isSameAs(down))
        .verify();
    assertThat(record().status()).isEqualTo(Status.FAILED);
    assertThat(record().lastError()).isEqualTo("java.io.IOException: gateway down");

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("charged"))))
        .then(executor::runAll).expectNext("charged").verifyComplete();
    assertThat(runs).hasValue(2);
  }

  @Test
  void aTerminalErrorIsStoredAndReplayedAsForABlockingCall() {
    OnceReactor onceReactor = OnceReactor.of(builder()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build());
    IllegalArgumentException declined = new IllegalArgumentException("card declined");

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(),
            charge(Mono.error(declined))))
        .then(executor::runAll)
        .expectErrorSatisfies(e -> assertThat(e).isSameAs(declined)).verify();
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll)
        .expectError(ReplayedFailureException.class).verify();

    assertThat(record().status()).isEqualTo(Status.COMPLETED);
    assertThat(runs).hasValue(1);
  }

  @Test
  void workThatThrowsOrReturnsNoMonoFailsLikeAnErrorSignal() {
    OnceReactor onceReactor = reactor();
    IOException early = new IOException("no connection");

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), attempt -> {
      throw early;
    })).then(executor::runAll).expectErrorSatisfies(e -> assertThat(e).isSameAs(early)).verify();
    assertThat(record().status()).isEqualTo(Status.FAILED);

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), attempt -> null))
        .then(executor::runAll)
        .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(NullPointerException.class)
            .hasMessageContaining("returned no Mono"))
        .verify();
    assertThat(record().status()).isEqualTo(Status.FAILED);
  }

  @Test
  void aDuplicateWhileTheOriginalRunsAndAKeyReusedAreRefused() {
    OnceReactor onceReactor = reactor();
    Sinks.One<String> pending = Sinks.one();
    CompletableFuture<String> original = onceReactor.execute(key, FP, Codecs.utf8(),
        charge(pending.asMono())).toFuture();
    executor.runAll();

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll).expectError(RequestInProgressException.class).verify();
    StepVerifier.create(onceReactor.execute(key, Fingerprint.of("other body"), Codecs.utf8(),
            charge(Mono.just("x"))))
        .then(executor::runAll).expectError(KeyReusedException.class).verify();

    pending.tryEmitValue("charged");
    executor.runAll();
    assertThat(original).isCompletedWithValue("charged");
    assertThat(runs).hasValue(1);
  }

  @Test
  void cancellingAfterTheClaimNeitherReleasesTheClaimNorCancelsTheWorkNorLosesTheOutcome() {
    OnceReactor onceReactor = reactor();
    Sinks.One<String> pending = Sinks.one();
    AtomicBoolean workCancelled = new AtomicBoolean();
    List<Object> delivered = new CopyOnWriteArrayList<>();
    Disposable subscriber = onceReactor.execute(key, FP, Codecs.utf8(),
            charge(pending.asMono().doOnCancel(() -> workCancelled.set(true))))
        .subscribe(delivered::add, delivered::add, () -> delivered.add("complete"));
    executor.runAll();
    assertThat(record().status()).isEqualTo(Status.IN_PROGRESS);

    subscriber.dispose();
    executor.runAll();

    assertThat(workCancelled).as("the work's Mono is not cancelled").isFalse();
    assertThat(record().status()).as("still claimed").isEqualTo(Status.IN_PROGRESS);
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll).expectError(RequestInProgressException.class).verify();

    pending.tryEmitValue("charged");
    executor.runAll();

    assertThat(record().status()).isEqualTo(Status.COMPLETED);
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll).expectNext("charged").verifyComplete();
    assertThat(delivered).as("nothing reaches a cancelled subscriber").isEmpty();
    assertThat(runs).hasValue(1);
  }

  @Test
  void cancellingBeforeTheClaimStillMakesTheCallWhichRunsAndStores() {
    OnceReactor onceReactor = reactor();
    List<Object> delivered = new CopyOnWriteArrayList<>();
    Disposable subscriber = onceReactor.execute(key, FP, Codecs.utf8(),
            charge(Mono.just("charged")))
        .subscribe(delivered::add, delivered::add, () -> delivered.add("complete"));

    subscriber.dispose();
    assertThat(store().find(key)).as("not claimed yet").isEmpty();
    executor.runAll();

    assertThat(runs).hasValue(1);
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
    assertThat(delivered).isEmpty();
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll).expectNext("charged").verifyComplete();
  }

  @Test
  void workThatNeverEndsKeepsTheClaimUntilTheLeasePassesThenASuccessorTakesOverFenced() {
    OnceReactor onceReactor = reactor();
    Sinks.One<String> stuck = Sinks.one();
    Disposable subscriber = onceReactor.execute(key, FP, Codecs.utf8(), charge(stuck.asMono()))
        .subscribe(v -> { }, e -> { });
    executor.runAll();
    long first = record().token();
    subscriber.dispose();

    clock.advance(LEASE.plusSeconds(1));
    StepVerifier.create(onceReactor.call(key, FP, Codecs.utf8(), charge(Mono.just("retried"))))
        .then(executor::runAll)
        .assertNext(r -> {
          assertThat(r.value()).isEqualTo("retried");
          assertThat(r.token()).isEqualTo(first + 1);
        }).verifyComplete();

    stuck.tryEmitValue("late"); // the zombie's outcome is refused by the fencing token
    executor.runAll();
    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(), charge(Mono.just("x"))))
        .then(executor::runAll).expectNext("retried").verifyComplete();
    assertThat(runs).hasValue(2);
  }

  @Test
  void theSubscribersContextIsTheWorks() {
    OnceReactor onceReactor = reactor();

    StepVerifier.create(onceReactor.execute(key, FP, Codecs.utf8(),
                attempt -> Mono.deferContextual(c -> Mono.just("for " + c.get("user"))))
            .contextWrite(Context.of("user", "alice")))
        .then(executor::runAll).expectNext("for alice").verifyComplete();
  }

  @Test
  void storeCallsNeverRunOnReactorsParallelThreads() throws Exception {
    Set<String> storeThreads = Stores.threadNames();
    AtomicInteger named = new AtomicInteger();
    threads = Executors.newCachedThreadPool(task -> {
      Thread t = new Thread(task, "once-store-" + named.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    OnceReactor onceReactor = OnceReactor.of(Once.builder(
            Stores.recordingThreads(store(), storeThreads))
        .lease(LEASE).asyncExecutor(threads).build());
    storeThreads.clear(); // build() asked the store its payload bound, on this thread
    AtomicReference<String> subscribedOn = new AtomicReference<>();
    AtomicReference<String> signalledOn = new AtomicReference<>();
    AtomicReference<String> answeredOn = new AtomicReference<>();
    ReactiveWork<String> work = attempt -> Mono.fromCallable(() -> {
          runs.incrementAndGet();
          signalledOn.set(Thread.currentThread().getName());
          return "charged";
        })
        .subscribeOn(Schedulers.parallel())
        .doOnSubscribe(s -> subscribedOn.set(Thread.currentThread().getName()));

    for (int call = 0; call < 2; call++) {
      String value = onceReactor.execute(key, FP, Codecs.utf8(), work)
          .doOnNext(v -> answeredOn.compareAndSet(null, Thread.currentThread().getName()))
          .subscribeOn(Schedulers.parallel())
          .block(Duration.ofSeconds(30));
      assertThat(value).isEqualTo("charged");
    }
    IdempotencyKey failing = IdempotencyKey.of("reactor.charge", UUID.randomUUID().toString());
    IOException down = new IOException("down");
    StepVerifier.create(onceReactor.execute(failing, FP, Codecs.utf8(),
            attempt -> Mono.<String>error(down).subscribeOn(Schedulers.parallel()))
        .subscribeOn(Schedulers.parallel()))
        .expectErrorSatisfies(e -> assertThat(e).isSameAs(down)).verify(Duration.ofSeconds(30));

    assertThat(runs).hasValue(1);
    assertThat(signalledOn.get()).startsWith("parallel-");
    assertThat(subscribedOn.get()).as("the work is subscribed on the claim's thread")
        .startsWith("once-store-");
    assertThat(answeredOn.get()).as("the first answer, stored after the work signalled")
        .startsWith("once-store-");
    assertThat(storeThreads).isNotEmpty()
        .noneMatch(name -> name.startsWith("parallel-"))
        .allMatch(name -> name.startsWith("once-store-"));
    assertThat(store().find(failing).orElseThrow().status()).isEqualTo(Status.FAILED);
  }

  @Test
  void concurrentSubscribersOfOneKeyRunItOnce() throws Exception {
    OnceReactor onceReactor = OnceReactor.of(Once.builder(store()).lease(LEASE).build());
    CompletableFuture<Void> go = new CompletableFuture<>();
    List<CompletableFuture<String>> answers = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      answers.add(Mono.fromFuture(go).publishOn(Schedulers.parallel())
          .then(onceReactor.execute(key, FP, Codecs.utf8(), attempt -> Mono.fromCallable(
              () -> "charged " + runs.incrementAndGet()).subscribeOn(Schedulers.parallel())))
          .subscribeOn(Schedulers.parallel())
          .toFuture());
    }
    go.complete(null);

    int charged = 0;
    for (CompletableFuture<String> answer : answers) {
      try {
        assertThat(answer.get(30, TimeUnit.SECONDS)).isEqualTo("charged 1");
        charged++;
      } catch (java.util.concurrent.ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(RequestInProgressException.class);
      }
    }
    assertThat(charged).isPositive();
    assertThat(runs).hasValue(1);
    assertThat(record().status()).isEqualTo(Status.COMPLETED);
  }
}
