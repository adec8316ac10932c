package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RACERS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.once.Codecs;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.spi.Claim;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Coalesced store calls ({@code Once.Builder.coalesceStoreCalls}) over the store: a key the
 * store refuses in a shared claim fails only its caller, a zombie's completion racing its
 * successor's is fenced per key, many callers on few keys run each key once; each on platform
 * and on virtual threads ({@link Racers}; JDK 21+).
 */
abstract class CoalescedTester extends ConformanceTester {

  CoalescedTester(StoreConformanceSuite suite) {
    super(suite);
  }

  /** Store methods called through {@link #gated}, in order. */
  private final List<String> calls = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final CountDownLatch gateEntered = new CountDownLatch(1);
  private final CountDownLatch gateOpen = new CountDownLatch(1);

  /**
   * The store, each call recorded; the first {@code claim} waits at a gate, so that the calls
   * arriving meanwhile queue up and share the next store call.
   */
  private IdempotencyStore gated() {
    java.util.concurrent.atomic.AtomicBoolean first =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    return (IdempotencyStore) java.lang.reflect.Proxy.newProxyInstance(
        IdempotencyStore.class.getClassLoader(), new Class<?>[] {IdempotencyStore.class},
        (proxy, method, args) -> {
          calls.add(method.getName());
          if (method.getName().equals("claim") && first.getAndSet(false)) {
            gateEntered.countDown();
            assertThat(gateOpen.await(60, TimeUnit.SECONDS)).isTrue();
          }
          try {
            return method.invoke(store, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /** One batch call of each kind at a time: the calls queued behind it share the next. */
  private Once coalescing(IdempotencyStore on) {
    return once(Once.builder(on).coalesceStoreCalls(1));
  }

  /** Starts {@code task} on a thread of its own; the future completes with its answer. */
  private <T> java.util.concurrent.CompletableFuture<T> start(Racers racers, Callable<T> task,
      List<Thread> started) {
    java.util.concurrent.CompletableFuture<T> answer =
        new java.util.concurrent.CompletableFuture<>();
    Thread t = racers.factory().newThread(() -> {
      try {
        answer.complete(task.call());
      } catch (Throwable e) {
        answer.completeExceptionally(e);
      }
    });
    t.setDaemon(true);
    started.add(t);
    t.start();
    return answer;
  }

  /**
   * Waits (polling, with a deadline) until {@code t} is parked, waiting for a shared call (a
   * queued caller parks for a while at a time, to see whether the calls in flight are late).
   */
  private void awaitParked(Thread t) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING) {
      assertThat(System.nanoTime()).as("%s parked in time", t).isLessThan(deadline);
      Thread.onSpinWait();
      Thread.yield();
    }
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void aKeyTheStoreRefusesInASharedClaimFailsOnlyItsOwnCaller(Racers racers) throws Exception {
    IdempotencyKey opener = newKey();
    IdempotencyKey good = newKey();
    IdempotencyKey bad = newKey();
    IdempotencyKey alsoGood = newKey();
    assumeTrue(poison(bad), "the store cannot inject a claim fault");
    List<Thread> threads = new ArrayList<>();
    try {
      Once once = coalescing(gated());
      var first = start(racers, () -> once.execute(opener, FP, Codecs.utf8(), a -> "first"),
          threads);
      assertThat(gateEntered.await(60, TimeUnit.SECONDS)).isTrue();
      var answers = new ArrayList<java.util.concurrent.CompletableFuture<String>>();
      for (IdempotencyKey key : List.of(good, bad, alsoGood)) {
        answers.add(start(racers,
            () -> once.execute(key, FP, Codecs.utf8(), a -> "ran " + key.key()), threads));
        awaitParked(threads.get(threads.size() - 1));
      }

      gateOpen.countDown();

      assertThat(first.get(60, TimeUnit.SECONDS)).isEqualTo("first");
      assertThat(answers.get(0).get(60, TimeUnit.SECONDS)).isEqualTo("ran " + good.key());
      assertThat(answers.get(2).get(60, TimeUnit.SECONDS)).isEqualTo("ran " + alsoGood.key());
      assertThat(answers.get(1)).failsWithin(60, TimeUnit.SECONDS);
      assertThat(calls).as("the three waiting calls shared one claimAll").contains("claimAll");
    } finally {
      gateOpen.countDown();
      heal(bad);
    }
    assertThat(store.claim(request(bad, FP))).as("nothing of the refused batch is held")
        .isInstanceOf(Claim.Acquired.class);
    assertThat(record(good).status()).isEqualTo(Status.COMPLETED);
    assertThat(record(alsoGood).status()).isEqualTo(Status.COMPLETED);
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void aZombiesCompletionRacingItsSuccessorsIsFencedPerKey(Racers racers) throws Exception {
    IdempotencyKey key = newKey();
    Once once = coalescing(store);
    CountDownLatch zombieWorking = new CountDownLatch(1);
    CountDownLatch successorWorking = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    var zombie = start(racers, () -> once.execute(key, FP, Codecs.utf8(), a -> {
      zombieWorking.countDown();
      assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
      return "zombie";
    }), threads);
    assertThat(zombieWorking.await(60, TimeUnit.SECONDS)).isTrue();
    clock.advance(LEASE.plusSeconds(1));
    var successor = start(racers, () -> once.execute(key, FP, Codecs.utf8(), a -> {
      successorWorking.countDown();
      assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
      return "successor";
    }), threads);
    assertThat(successorWorking.await(60, TimeUnit.SECONDS)).isTrue();

    finish.countDown(); // both complete at once, through the same coalescer

    assertThat(successor.get(60, TimeUnit.SECONDS)).isEqualTo("successor");
    assertThat(zombie).failsWithin(60, TimeUnit.SECONDS).withThrowableThat()
        .havingCause().isInstanceOf(LeaseLostException.class);
    assertThat(once.execute(key, FP, Codecs.utf8(), a -> "never")).isEqualTo("successor");
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void manyCallersOnFewKeysRunEachKeyOnce(Racers racers) throws Exception {
    manyCallersOnFewKeysRunEachKeyOnce(racers, coalescing(store));
  }

  /**
   * As above, through Once as built by default: coalescing as the store suggests
   * ({@code IdempotencyStore.defaultCoalescing}), which must answer -1 ("not known yet"), 0 or
   * more, and not -1 once the store has served a call.
   */
  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void manyCallersOnFewKeysRunEachKeyOnceWithTheStoresDefaultCoalescing(Racers racers)
      throws Exception {
    assertThat(store.defaultCoalescing()).as("the store's suggestion").isGreaterThanOrEqualTo(-1);
    manyCallersOnFewKeysRunEachKeyOnce(racers, once(Once.builder(store)));
    assertThat(store.defaultCoalescing()).as("the store's suggestion, once it has served calls")
        .isGreaterThanOrEqualTo(0);
  }

  private void manyCallersOnFewKeysRunEachKeyOnce(Racers racers, Once once) throws Exception {
    List<IdempotencyKey> keys = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      keys.add(newKey());
    }
    java.util.Map<IdempotencyKey, AtomicInteger> runs =
        new java.util.concurrent.ConcurrentHashMap<>();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    List<java.util.concurrent.CompletableFuture<Integer>> done = new ArrayList<>();
    for (int t = 0; t < RACERS; t++) {
      int offset = t;
      done.add(start(racers, () -> {
        assertThat(go.await(60, TimeUnit.SECONDS)).isTrue();
        int answered = 0;
        for (int i = 0; i < keys.size(); i++) {
          IdempotencyKey key = keys.get((i + offset) % keys.size());
          try {
            String value = once.execute(key, FP, Codecs.utf8(), a -> {
              runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
              return "value of " + key.key();
            });
            assertThat(value).isEqualTo("value of " + key.key());
            answered++;
          } catch (RequestInProgressException e) {
            answered++; // the original runs on another thread
          }
        }
        return answered;
      }, threads));
    }
    go.countDown();
    for (var d : done) {
      assertThat(d.get(60, TimeUnit.SECONDS)).isEqualTo(keys.size());
    }
    for (IdempotencyKey key : keys) {
      assertThat(runs.get(key)).as("runs of %s", key).hasValue(1);
      assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    }
  }
}
