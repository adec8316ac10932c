package dev.once.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Group commit with real threads: a lone caller calls alone at once; callers arriving while a
 * call is in flight share the next; a batch that fails is repeated request by request.
 */
class CoalescerTest {

  private final ExecutorService threads = Executors.newCachedThreadPool();
  /** Every store call made: "one:x" or "many:[x, y]". */
  private final List<String> calls = new CopyOnWriteArrayList<>();
  private final CountDownLatch firstCallEntered = new CountDownLatch(1);
  private final CountDownLatch releaseFirstCall = new CountDownLatch(1);

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  private String one(String request) {
    calls.add("one:" + request);
    if (request.equals("first")) {
      firstCallEntered.countDown();
      await(releaseFirstCall);
    }
    if (request.startsWith("bad")) {
      throw new IllegalStateException("refused " + request);
    }
    return request.toUpperCase();
  }

  private List<String> many(List<String> requests) {
    calls.add("many:" + requests);
    if (requests.stream().anyMatch(r -> r.startsWith("bad"))) {
      throw new IllegalStateException("the batch was refused");
    }
    List<String> answers = new ArrayList<>();
    for (String r : requests) {
      answers.add(r.toUpperCase());
    }
    return answers;
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aLoneCallerCallsAloneAndAtOnce() {
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, this::one, this::many);

    assertThat(coalescer.call("a")).isEqualTo("A");
    assertThat(coalescer.call("b")).isEqualTo("B");
    assertThat(calls).containsExactly("one:a", "one:b");
  }

  @Test
  void callersArrivingDuringACallShareTheNextInArrivalOrderBoundedInSize() throws Exception {
    Coalescer<String, String> coalescer = new Coalescer<>(3, 1, this::one, this::many);
    Future<String> first = threads.submit(() -> coalescer.call("first"));
    await(firstCallEntered);
    List<Future<String>> queued = new ArrayList<>();
    for (String r : List.of("b", "c", "d", "e")) {
      queued.add(threads.submit(() -> coalescer.call(r)));
      waitUntilQueued(coalescer, queued.size());
    }

    releaseFirstCall.countDown();

    assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo("FIRST");
    List<String> answers = new ArrayList<>();
    for (Future<String> f : queued) {
      answers.add(f.get(30, TimeUnit.SECONDS));
    }
    assertThat(answers).containsExactly("B", "C", "D", "E");
    assertThat(calls).containsExactly("one:first", "many:[b, c, d]", "one:e");
  }

  @Test
  void aRefusedBatchIsRepeatedRequestByRequestSoOnlyTheBadOneFails() throws Exception {
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, this::one, this::many);
    Future<String> first = threads.submit(() -> coalescer.call("first"));
    await(firstCallEntered);
    Future<String> good = threads.submit(() -> coalescer.call("good"));
    waitUntilQueued(coalescer, 1);
    Future<String> bad = threads.submit(() -> coalescer.call("bad"));
    waitUntilQueued(coalescer, 2);

    releaseFirstCall.countDown();

    assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo("FIRST");
    assertThat(good.get(30, TimeUnit.SECONDS)).isEqualTo("GOOD");
    assertThat(bad).failsWithin(30, TimeUnit.SECONDS).withThrowableThat()
        .havingRootCause().withMessage("refused bad");
    assertThat(calls).containsExactly("one:first", "many:[good, bad]", "one:good", "one:bad");
  }

  /**
   * Racing on platform and on virtual threads (JDK 21+; skipped before). Core's tests cannot use
   * once-testkit's {@code Racers} (the testkit depends on core), hence the reflection here.
   */
  @ParameterizedTest(name = "on {0} threads")
  @ValueSource(strings = {"platform", "virtual"})
  @Tag("races")
  void manyRealThreadsEachGetTheirOwnAnswer(String kind) throws Exception {
    ExecutorService threads = kind.equals("virtual") ? virtualThreads() : this.threads;
    Coalescer<String, String> coalescer = new Coalescer<>(16, 4,
        r -> r.toUpperCase(), rs -> rs.stream().map(String::toUpperCase).toList());
    List<Future<Boolean>> results = new ArrayList<>();
    CountDownLatch start = new CountDownLatch(1);
    for (int t = 0; t < 32; t++) {
      int thread = t;
      results.add(threads.submit(() -> {
        await(start);
        for (int i = 0; i < 500; i++) {
          String request = "t" + thread + "-" + i;
          if (!coalescer.call(request).equals(request.toUpperCase())) {
            return false;
          }
        }
        return true;
      }));
    }
    start.countDown();
    try {
      for (Future<Boolean> r : results) {
        assertThat(r.get(60, TimeUnit.SECONDS)).isTrue();
      }
    } finally {
      threads.shutdownNow();
    }
  }

  /** A new virtual thread per task (JDK 21+); before JDK 21 the test is skipped. */
  private static ExecutorService virtualThreads() throws ReflectiveOperationException {
    assumeTrue(Runtime.version().feature() >= 21, "virtual threads need JDK 21+");
    Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
    ThreadFactory factory = (ThreadFactory) Class.forName("java.lang.Thread$Builder")
        .getMethod("factory").invoke(builder);
    return (ExecutorService) Executors.class
        .getMethod("newThreadPerTaskExecutor", ThreadFactory.class).invoke(null, factory);
  }

  /** Polls (no sleeping past a condition) until {@code n} requests wait behind the call. */
  private static void waitUntilQueued(Coalescer<?, ?> coalescer, int n) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (coalescer.queued() < n) {
      assertThat(System.nanoTime()).as("%d requests queued in time", n).isLessThan(deadline);
      Thread.onSpinWait();
      Thread.yield();
    }
  }
}
