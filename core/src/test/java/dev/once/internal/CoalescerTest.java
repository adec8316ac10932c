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
import java.util.concurrent.atomic.AtomicInteger;
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

  /** Daemon threads: a regression that leaves one waiting forever fails the test, not the JVM. */
  private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r);
    t.setDaemon(true);
    return t;
  });
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
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, this::one, this::many);

    assertThat(coalescer.call("a")).isEqualTo("A");
    assertThat(coalescer.call("b")).isEqualTo("B");
    assertThat(calls).containsExactly("one:a", "one:b");
  }

  @Test
  void callersArrivingDuringACallShareTheNextInArrivalOrderBoundedInSize() throws Exception {
    Coalescer<String, String> coalescer = new Coalescer<>(3, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, this::one, this::many);
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
    List<String> detours = new java.util.concurrent.CopyOnWriteArrayList<>();
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, this::one, this::many,
        (detour, n) -> detours.add(detour + ":" + n));

    eachOfARefusedBatchIsAnsweredAlone(coalescer);

    assertThat(calls).startsWith("one:first", "many:[good, bad]")
        .containsExactlyInAnyOrder("one:first", "many:[good, bad]", "one:good", "one:bad");
    assertThat(detours).as("told as a detour").containsExactly("BATCH_FAILED:2");
  }

  /**
   * "first" calls alone and is held while "good" and "bad" queue; once it ends they share a
   * batch, which the store refuses (it holds "bad"): each is then answered alone.
   */
  private void eachOfARefusedBatchIsAnsweredAlone(Coalescer<String, String> coalescer)
      throws Exception {
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
  }

  /**
   * In an outage every request of a failed batch fails again: repeated one after the other on the
   * leader's thread, the last caller would learn of it only after everyone's call ahead of it.
   */
  @Test
  void aRefusedBatchIsRepeatedByEachCallerOnItsOwnThread() throws Exception {
    java.util.Map<String, Thread> ranOn = new java.util.concurrent.ConcurrentHashMap<>();
    java.util.Map<String, Thread> calledFrom = new java.util.concurrent.ConcurrentHashMap<>();
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, r -> {
      ranOn.put(r, Thread.currentThread());
      return one(r);
    }, this::many);
    Future<String> first = threads.submit(() -> coalescer.call("first"));
    await(firstCallEntered);
    List<Future<String>> queued = new ArrayList<>();
    for (String r : List.of("bad-a", "bad-b", "bad-c")) {
      queued.add(threads.submit(() -> {
        calledFrom.put(r, Thread.currentThread());
        return coalescer.call(r);
      }));
      waitUntilQueued(coalescer, queued.size());
    }

    releaseFirstCall.countDown();

    assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo("FIRST");
    for (Future<String> f : queued) {
      assertThat(f).failsWithin(30, TimeUnit.SECONDS);
    }
    assertThat(calls).contains("many:[bad-a, bad-b, bad-c]");
    for (String r : List.of("bad-a", "bad-b", "bad-c")) {
      assertThat(ranOn.get(r)).as("the thread that repeated %s", r).isSameAs(calledFrom.get(r));
    }
  }

  /** Requests named "hold…" block in their single call until {@link #release}d. */
  private final java.util.Map<String, CountDownLatch[]> holds =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** A store call for {@code request} that blocks until released; returns when it has begun. */
  private Future<String> callHeld(Coalescer<String, String> coalescer, String request) {
    CountDownLatch[] latches = {new CountDownLatch(1), new CountDownLatch(1)};
    holds.put(request, latches);
    Future<String> answer = threads.submit(() -> coalescer.call(request));
    await(latches[0]);
    return answer;
  }

  private void release(String request) {
    holds.get(request)[1].countDown();
  }

  private String holding(String request) {
    CountDownLatch[] latches = holds.get(request);
    if (latches != null) {
      latches[0].countDown();
      await(latches[1]);
    }
    return one(request);
  }

  @Test
  void callersNoMoreThanCallsAloneEachCallAloneAtOnce() throws Exception {
    Coalescer<String, String> coalescer =
        new Coalescer<>(8, 3, 1, new Coalescer.Demand(), System::nanoTime, 0,
            this::holding, this::many);

    List<String> requests = List.of("hold-a", "hold-b", "hold-c");
    List<Future<String>> held = new ArrayList<>();
    for (String r : requests) {
      held.add(callHeld(coalescer, r)); // returns once its own call has begun: nobody waited
    }
    assertThat(coalescer.queued()).isZero();
    requests.forEach(this::release);

    for (Future<String> f : held) {
      assertThat(f.get(30, TimeUnit.SECONDS)).startsWith("HOLD-");
    }
    assertThat(calls).containsExactlyInAnyOrder("one:hold-a", "one:hold-b", "one:hold-c");
  }

  @Test
  void callersBeyondCallsAloneQueueAndShareOneBatchOnceTheCallsInFlightShrink() throws Exception {
    Coalescer<String, String> coalescer =
        new Coalescer<>(8, 2, 1, new Coalescer.Demand(), System::nanoTime, 0,
            this::holding, this::many);
    Future<String> a = callHeld(coalescer, "hold-a");
    Future<String> b = callHeld(coalescer, "hold-b");
    List<Future<String>> queued = new ArrayList<>();
    for (String r : List.of("c", "d", "e")) {
      queued.add(threads.submit(() -> coalescer.call(r)));
      waitUntilQueued(coalescer, queued.size());
    }

    // Demand is 5, above 2 alone: one batch call at a time. The first call to end gives its slot
    // up (the other still in flight will serve the queue), so nothing is called yet.
    release("hold-a");
    assertThat(a.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-A");
    assertThat(coalescer.queued()).isEqualTo(3);
    release("hold-b");

    assertThat(b.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-B");
    for (Future<String> f : queued) {
      assertThat(f.get(30, TimeUnit.SECONDS)).isIn("C", "D", "E");
    }
    assertThat(calls).containsExactly("one:hold-a", "one:hold-b", "many:[c, d, e]");

    // The load gone, a caller calls alone again.
    assertThat(coalescer.call("f")).isEqualTo("F");
    assertThat(calls).endsWith("one:f");
  }

  /**
   * Callers answered together by one coalescer arrive together at its sibling (claims, then
   * completions): the sibling must count them, or each would find its queue empty and call alone.
   */
  @Test
  void callersInASiblingCoalescerCountTowardsTheDemand() throws Exception {
    Coalescer.Demand demand = new Coalescer.Demand();
    Coalescer<String, String> claims =
        new Coalescer<>(8, 2, 1, demand, System::nanoTime, 0,
            this::holding, this::many);
    Coalescer<String, String> completions =
        new Coalescer<>(8, 2, 1, demand, System::nanoTime, 0,
            this::holding, this::many);
    Future<String> claiming = callHeld(claims, "hold-claim");
    Future<String> completing = callHeld(completions, "hold-complete");

    // Alone, this coalescer has one call in flight and room for two; with its sibling's caller
    // the demand is 3, above 2, so it batches: one call in flight, and this caller queues.
    Future<String> next = threads.submit(() -> completions.call("x"));
    waitUntilQueued(completions, 1);

    release("hold-complete");
    assertThat(completing.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-COMPLETE");
    assertThat(next.get(30, TimeUnit.SECONDS)).isEqualTo("X");
    release("hold-claim");
    assertThat(claiming.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-CLAIM");
    assertThat(demand.callers()).isZero();
  }

  /**
   * A caller queued while the demand (with the sibling's callers) was above callsAlone: when the
   * sibling's callers leave, a slot is free at once. It used to wait for a call of its own kind
   * to end, however slow, with that slot free and nobody else waiting.
   */
  @Test
  void aQueuedCallerIsServedWhenTheDemandFallsNotWhenACallOfItsOwnKindEnds() throws Exception {
    Coalescer.Demand demand = new Coalescer.Demand();
    Coalescer<String, String> claims = new Coalescer<>(8, 2, 1,
        demand, System::nanoTime, 0, this::holding, this::many);
    Coalescer<String, String> completions = new Coalescer<>(8, 2, 1,
        demand, System::nanoTime, 0, this::holding, this::many);
    Future<String> claiming = callHeld(claims, "hold-claim");
    Future<String> completing = callHeld(completions, "hold-complete");
    Future<String> next = threads.submit(() -> completions.call("x"));
    waitUntilQueued(completions, 1); // demand 3, above 2: one call in flight, and it is taken
    try {
      release("hold-claim"); // demand 2: two calls may be in flight, and only one is
      assertThat(claiming.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-CLAIM");

      assertThat(next.get(10, TimeUnit.SECONDS))
          .as("served while the completion in flight is still held").isEqualTo("X");
      assertThat(completing).isNotDone();
      assertThat(calls).containsExactly("one:hold-claim", "one:x");
    } finally {
      release("hold-complete");
    }
    assertThat(completing.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-COMPLETE");
    assertThat(demand.callers()).isZero();
  }

  /**
   * The detours reach the user's listener, which may throw anything, a StackOverflowError too
   * (found by review: an Error thrown while telling a failed batch left its other callers
   * waiting for good). Telling is the last thing done, and what it throws is dropped.
   */
  @Test
  void aDetourListenerThatThrowsAnErrorOnAFailedBatchLeavesNoCallerWaiting() throws Exception {
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, this::one, this::many,
        (detour, n) -> {
          throw new StackOverflowError("the listener failed");
        });

    eachOfARefusedBatchIsAnsweredAlone(coalescer);

    assertThat(calls).contains("many:[good, bad]");
    assertThat(coalescer.callsInFlight()).isZero();
  }

  /** As above, for an escape: the escaping caller leads the batch it took whatever it is told. */
  @Test
  void aDetourListenerThatThrowsAnErrorOnAnEscapeLeavesNoCallerWaiting() throws Exception {
    java.util.concurrent.atomic.AtomicLong ticker = new java.util.concurrent.atomic.AtomicLong();
    long escape = TimeUnit.MILLISECONDS.toNanos(5);
    Coalescer.Demand demand = new Coalescer.Demand();
    Coalescer<String, String> coalescer = new Coalescer<>(8, 2, 1,
        demand, ticker::get, escape, this::holding, this::many, (detour, n) -> {
          throw new StackOverflowError("the listener failed");
        });
    demand.addCallersForTest(2); // above callsAlone: one batch call
    Future<String> stuck = callHeld(coalescer, "hold-stuck");
    try {
      Future<String> x = threads.submit(() -> coalescer.call("x"));
      waitUntilQueued(coalescer, 1);
      Future<String> y = threads.submit(() -> coalescer.call("y"));
      waitUntilQueued(coalescer, 2);
      ticker.addAndGet(escape);

      assertThat(x.get(10, TimeUnit.SECONDS)).isEqualTo("X");
      assertThat(y.get(10, TimeUnit.SECONDS)).isEqualTo("Y");
      assertThat(calls).containsExactly("many:[x, y]");
    } finally {
      release("hold-stuck");
    }
    assertThat(stuck.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-STUCK");
    assertThat(coalescer.callsInFlight()).isZero();
    demand.addCallersForTest(-2);
  }

  /**
   * Callers queued behind calls that do not end (a batch waiting for a row lock, a server that
   * stalls): once the oldest has waited the escape time (on the ticker), it makes one more call,
   * with everything queued, as long as fewer than callsAlone calls are in flight.
   */
  @Test
  void queuedCallersEscapeCallsInFlightThatAnswerLate() throws Exception {
    java.util.concurrent.atomic.AtomicLong ticker = new java.util.concurrent.atomic.AtomicLong();
    long escape = TimeUnit.MILLISECONDS.toNanos(5);
    Coalescer.Demand demand = new Coalescer.Demand();
    List<String> detours = new java.util.concurrent.CopyOnWriteArrayList<>();
    Coalescer<String, String> claims = new Coalescer<>(8, 3, 1,
        demand, ticker::get, escape, this::holding, this::many,
        (detour, n) -> detours.add("claims " + detour + ":" + n));
    Coalescer<String, String> completions = new Coalescer<>(8, 3, 1,
        demand, ticker::get, escape, this::holding, this::many,
        (detour, n) -> detours.add("completions " + detour + ":" + n));
    List<Future<String>> held = new ArrayList<>();
    held.add(callHeld(claims, "hold-a"));
    held.add(callHeld(claims, "hold-b"));
    held.add(callHeld(completions, "hold-c")); // three alone: the demand is at callsAlone
    Future<String> d = threads.submit(() -> completions.call("d"));
    waitUntilQueued(completions, 1); // demand 4: one call in flight (held), and it is taken
    Future<String> e = threads.submit(() -> completions.call("e"));
    waitUntilQueued(completions, 2);
    try {
      ticker.addAndGet(escape);

      assertThat(d.get(10, TimeUnit.SECONDS)).isEqualTo("D");
      assertThat(e.get(10, TimeUnit.SECONDS)).isEqualTo("E");
      assertThat(held).noneMatch(Future::isDone);
      assertThat(calls).containsExactly("many:[d, e]");
      assertThat(detours).as("told as a detour").containsExactly("completions ESCAPE:2");
      assertThat(completions.escapedSlots()).as("kept: the call escaped from is stuck still")
          .isEqualTo(1);
    } finally {
      List.of("hold-a", "hold-b", "hold-c").forEach(this::release);
    }
    for (Future<String> f : held) {
      assertThat(f.get(30, TimeUnit.SECONDS)).startsWith("HOLD-");
    }
    assertThat(completions.escapedSlots()).as("the call escaped from ended").isZero();
    assertThat(demand.callers()).isZero();
  }

  /**
   * Every call in flight is stuck (callers alone waiting at the server for a row a long
   * transaction holds: with coalescing on by default on PostgreSQL, eight lease-mode duplicates
   * of a key a TransactionalOnce call holds), so no slot is left to escape with. A queued caller
   * on another key used to wait until they ended (found by review); now, once none has ended for
   * the escape time, it makes one call beyond callsAlone, as it would have without coalescing.
   */
  @Test
  void queuedCallersEscapeEvenWhenEveryCallInFlightIsStuck() throws Exception {
    java.util.concurrent.atomic.AtomicLong ticker = new java.util.concurrent.atomic.AtomicLong();
    long escape = TimeUnit.MILLISECONDS.toNanos(5);
    Coalescer.Demand demand = new Coalescer.Demand();
    List<String> detours = new java.util.concurrent.CopyOnWriteArrayList<>();
    Coalescer<String, String> claims = new Coalescer<>(8, 2, 1,
        demand, ticker::get, escape, this::holding, this::many,
        (detour, n) -> detours.add(detour + ":" + n));
    Future<String> a = callHeld(claims, "hold-a");
    Future<String> b = callHeld(claims, "hold-b"); // callsAlone calls in flight, both stuck
    try {
      Future<String> c = threads.submit(() -> claims.call("c"));
      waitUntilQueued(claims, 1);
      Future<String> d = threads.submit(() -> claims.call("d"));
      waitUntilQueued(claims, 2);
      ticker.addAndGet(escape);

      assertThat(c.get(10, TimeUnit.SECONDS)).isEqualTo("C");
      assertThat(d.get(10, TimeUnit.SECONDS)).isEqualTo("D");
      assertThat(a).isNotDone();
      assertThat(b).isNotDone();
      assertThat(calls).containsExactly("many:[c, d]");
      assertThat(detours).containsExactly("ESCAPE:2");
      assertThat(claims.mostCallsBeyondCallsAlone()).isEqualTo(1);
      assertThat(claims.callsInFlight()).as("the call beyond callsAlone ended, kept by nobody")
          .isEqualTo(2);
    } finally {
      List.of("hold-a", "hold-b").forEach(this::release);
    }
    assertThat(a.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-A");
    assertThat(b.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-B");
    assertThat(claims.callsInFlight()).isZero();
    assertThat(demand.callers()).isZero();
  }

  /**
   * An escape's slot counts as the coalescer's while the call escaped from is stuck: a caller
   * arriving later takes it at once, without a second wait. Once no call is in flight, no escape
   * slot is left. (Before the review, a caller arriving later queued and waited for an escape of
   * its own, and each one left a slot behind for good.)
   */
  @Test
  void anEscapedSlotServesLaterCallersAtOnceAndGoesOnceNoCallIsInFlight() throws Exception {
    java.util.concurrent.atomic.AtomicLong ticker = new java.util.concurrent.atomic.AtomicLong();
    long escape = TimeUnit.MILLISECONDS.toNanos(5);
    Coalescer.Demand demand = new Coalescer.Demand();
    Coalescer<String, String> coalescer = new Coalescer<>(8, 4, 1,
        demand, ticker::get, escape, this::holding, this::many);
    demand.addCallersForTest(4); // callers in a sibling: above callsAlone, one batch call
    Future<String> stuck = callHeld(coalescer, "hold-stuck");
    try {
      Future<String> first = threads.submit(() -> coalescer.call("x1"));
      waitUntilQueued(coalescer, 1);
      ticker.addAndGet(escape);
      assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("X1");
      assertThat(coalescer.escapedSlots()).isEqualTo(1);

      for (String r : List.of("x2", "x3")) { // the ticker does not move: no escape of their own
        assertThat(threads.submit(() -> coalescer.call(r)).get(10, TimeUnit.SECONDS))
            .isEqualTo(r.toUpperCase());
      }
      assertThat(coalescer.escapedSlots()).isEqualTo(1);
      assertThat(calls).containsExactly("one:x1", "one:x2", "one:x3");
    } finally {
      release("hold-stuck");
    }
    assertThat(stuck.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-STUCK");
    assertThat(coalescer.escapedSlots()).as("nothing in flight, so nothing stuck").isZero();
    demand.addCallersForTest(-4);
  }

  /**
   * The ticker is the user's ({@code Once.Builder.ticker}). One that throws while a caller queues
   * used to leave the coalescer's lock held for good, and one that throws in the escape check
   * failed the caller with its request left in the queue (found by review). It now disables the
   * escape, never the call.
   */
  @Test
  void aTickerThatThrowsDisablesTheEscapeNotTheCall() throws Exception {
    java.util.concurrent.atomic.AtomicLong ticker = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicBoolean throwing =
        new java.util.concurrent.atomic.AtomicBoolean();
    long escape = TimeUnit.MILLISECONDS.toNanos(5);
    Coalescer.Demand demand = new Coalescer.Demand();
    Coalescer<String, String> coalescer = new Coalescer<>(8, 2, 1, demand, () -> {
      if (throwing.get()) {
        throw new IllegalStateException("the ticker failed");
      }
      return ticker.get();
    }, escape, this::holding, this::many);
    demand.addCallersForTest(2); // above callsAlone: one batch call
    Future<String> stuck = callHeld(coalescer, "hold-stuck");
    Future<String> escaping;
    Future<String> queuedWhileThrowing;
    try {
      escaping = threads.submit(() -> coalescer.call("x"));
      waitUntilQueued(coalescer, 1);
      throwing.set(true); // x's escape checks fail from now on
      queuedWhileThrowing = threads.submit(() -> coalescer.call("y"));
      waitUntilQueued(coalescer, 2);
      ticker.addAndGet(escape);
      throwing.set(false);

      assertThat(escaping.get(10, TimeUnit.SECONDS)).as("escaped once the ticker worked")
          .isEqualTo("X");
      assertThat(queuedWhileThrowing.get(10, TimeUnit.SECONDS)).as("taken into x's batch")
          .isEqualTo("Y");
      assertThat(stuck).isNotDone();
    } finally {
      release("hold-stuck");
    }
    assertThat(stuck.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-STUCK");
    assertThat(threads.submit(() -> coalescer.call("z")).get(10, TimeUnit.SECONDS))
        .isEqualTo("Z");
    demand.addCallersForTest(-2);
  }

  /**
   * As above, with an Error: the ticker is read for a caller that queues while the coalescer's
   * lock is held, and an Error there left the lock held for good, so the call in flight could not
   * hand over and every later caller waited (found by review).
   */
  @Test
  void aTickerThatThrowsAnErrorLeavesNoCallerWaiting() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean throwing =
        new java.util.concurrent.atomic.AtomicBoolean();
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1, new Coalescer.Demand(), () -> {
      if (throwing.get()) {
        throw new AssertionError("the ticker failed");
      }
      return 0L;
    }, TimeUnit.MILLISECONDS.toNanos(5), this::holding, this::many);
    Future<String> stuck = callHeld(coalescer, "hold-stuck");
    Future<String> queued;
    try {
      throwing.set(true);
      queued = threads.submit(() -> coalescer.call("x"));
      waitUntilQueued(coalescer, 1);
    } finally {
      release("hold-stuck");
    }

    assertThat(stuck.get(10, TimeUnit.SECONDS)).isEqualTo("HOLD-STUCK");
    assertThat(queued.get(10, TimeUnit.SECONDS)).isEqualTo("X");
    assertThat(threads.submit(() -> coalescer.call("y")).get(10, TimeUnit.SECONDS))
        .isEqualTo("Y");
  }

  /**
   * Escapes, admits and hand-overs racing (written by the review): two sibling coalescers sharing
   * a demand, an escape time of 300 µs on the real ticker so that escapes happen all the time,
   * store calls that now and then stall for a few milliseconds. Each request runs exactly once
   * and each caller gets its own answer; no more than callsAlone calls of a kind are ever in
   * flight (no batch fails here, so every call holds a slot) but for the most there were at once
   * of the calls escapes made when none of callsAlone calls in flight had ended for the escape
   * time (every one may be stuck: queuedCallersEscapeEvenWhenEveryCallInFlightIsStuck); at the
   * end nothing is in flight, queued or kept by an escape.
   */
  @ParameterizedTest(name = "{0} threads")
  @ValueSource(ints = {6, 48})
  @Tag("races")
  void racingEscapesAdmitsAndHandOversRunEachRequestOnceAndLeaveNothingBehind(int callers)
      throws Exception {
    int callsAlone = 4;
    Coalescer.Demand demand = new Coalescer.Demand();
    java.util.Map<String, AtomicInteger> runs = new java.util.concurrent.ConcurrentHashMap<>();
    List<Coalescer<String, String>> both = new ArrayList<>();
    List<AtomicInteger> mostInFlight = List.of(new AtomicInteger(), new AtomicInteger());
    for (String kind : List.of("claim", "complete")) {
      AtomicInteger inFlight = new AtomicInteger();
      AtomicInteger most = mostInFlight.get(both.size());
      java.util.function.Consumer<List<String>> store = rs -> {
        most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        try {
          int p = java.util.concurrent.ThreadLocalRandom.current().nextInt(100);
          if (p < 3) {
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
          } else if (p < 30) {
            java.util.concurrent.locks.LockSupport.parkNanos(100_000);
          }
        } finally {
          inFlight.decrementAndGet();
        }
        for (String r : rs) {
          runs.computeIfAbsent(kind + ":" + r, k -> new AtomicInteger()).incrementAndGet();
        }
      };
      both.add(new Coalescer<>(16, callsAlone, 2, demand, System::nanoTime,
          TimeUnit.MICROSECONDS.toNanos(300),
          r -> {
            store.accept(List.of(r));
            return kind + "(" + r + ")";
          },
          rs -> {
            store.accept(rs);
            return rs.stream().map(r -> kind + "(" + r + ")").toList();
          }));
    }
    int perCaller = callers < 10 ? 2000 : 300;
    CountDownLatch go = new CountDownLatch(1);
    List<Future<Boolean>> results = new ArrayList<>();
    for (int t = 0; t < callers; t++) {
      int caller = t;
      results.add(threads.submit(() -> {
        go.await();
        for (int i = 0; i < perCaller; i++) {
          String r = "t" + caller + "-" + i;
          if (!both.get(0).call(r).equals("claim(" + r + ")")
              || !both.get(1).call(r).equals("complete(" + r + ")")) {
            return false;
          }
        }
        return true;
      }));
    }
    go.countDown();
    for (Future<Boolean> f : results) {
      assertThat(f.get(120, TimeUnit.SECONDS)).as("each caller its own answers").isTrue();
    }
    assertThat(runs).hasSize(2 * callers * perCaller)
        .allSatisfy((k, n) -> assertThat(n).as(k).hasValue(1));
    assertThat(demand.callers()).isZero();
    for (int kind = 0; kind < 2; kind++) {
      assertThat(mostInFlight.get(kind).get()).as("most calls in flight")
          .isLessThanOrEqualTo(callsAlone + both.get(kind).mostCallsBeyondCallsAlone());
    }
    for (Coalescer<String, String> c : both) {
      assertThat(c.queued()).isZero();
      assertThat(c.callsInFlight()).isZero();
      assertThat(c.escapedSlots()).isZero();
    }
  }

  @Test
  void aCallAloneThatFailsFreesItsSlot() {
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, this::one, this::many);

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> coalescer.call("bad"))
        .hasMessage("refused bad");

    assertThat(coalescer.call("next")).isEqualTo("NEXT");
    assertThat(calls).containsExactly("one:bad", "one:next");
  }

  @Test
  void aQueuedCallerInterruptedStillGetsItsAnswerAndKeepsItsInterrupt() throws Exception {
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0,
            this::holding, this::many);
    Future<String> first = callHeld(coalescer, "hold-first");
    java.util.concurrent.atomic.AtomicReference<Thread> waiter =
        new java.util.concurrent.atomic.AtomicReference<>();
    Future<Boolean> interruptedAfter = threads.submit(() -> {
      waiter.set(Thread.currentThread());
      String answer = coalescer.call("b");
      return answer.equals("B") && Thread.currentThread().isInterrupted();
    });
    waitUntilQueued(coalescer, 1);

    waiter.get().interrupt();
    assertThat(coalescer.queued()).as("an interrupt does not take a request out").isEqualTo(1);
    release("hold-first");

    assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo("HOLD-FIRST");
    assertThat(interruptedAfter.get(30, TimeUnit.SECONDS)).isTrue();
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
    Coalescer.Demand demand = new Coalescer.Demand();
    Coalescer<String, String> coalescer = new Coalescer<>(16, 4, 2,
        demand, System::nanoTime, 0,
        r -> r.toUpperCase(), rs -> rs.stream().map(String::toUpperCase).toList());
    // A sibling sharing the demand, as a call's completion shares it with its claim.
    Coalescer<String, String> sibling = new Coalescer<>(16, 4, 2,
        demand, System::nanoTime, 0,
        r -> r.toLowerCase(), rs -> rs.stream().map(String::toLowerCase).toList());
    List<Future<Boolean>> results = new ArrayList<>();
    CountDownLatch start = new CountDownLatch(1);
    for (int t = 0; t < 32; t++) {
      int thread = t;
      results.add(threads.submit(() -> {
        await(start);
        for (int i = 0; i < 500; i++) {
          String request = "t" + thread + "-" + i;
          if (!coalescer.call(request).equals(request.toUpperCase())
              || !sibling.call(request.toUpperCase()).equals(request)) {
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
      assertThat(demand.callers()).isZero();
      assertThat(coalescer.queued()).isZero();
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
