package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.spi.IdempotencyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Durable steps and their journal: a journaled step replayed to a takeover on another store
 * client, a saga whose worker is killed anywhere running each effect and compensation once, a
 * reconciled step and a compensated saga.
 */
abstract class StepsTester extends ConformanceTester {

  StepsTester(StoreConformanceSuite suite) {
    super(suite);
  }

  @Test
  void aJournaledStepIsReplayedToATakeoverOnAnotherStoreInstance() {
    IdempotencyKey key = newKey();
    AtomicInteger mails = new AtomicInteger();
    IdempotencyStore restarted = anotherClient();
    try {
      assertThatThrownBy(() -> once(Once.builder(store)).execute(key, FP, Codecs.utf8(), a -> {
        a.step("mail", Codecs.utf8(), k -> "mail-" + mails.incrementAndGet());
        // This worker freezes past its lease; a worker on another store client takes over.
        clock.advance(LEASE);
        String taken = once(Once.builder(restarted)).execute(key, FP, Codecs.utf8(), b ->
            b.step("mail", Codecs.utf8(), k -> "mail-" + mails.incrementAndGet())
                + "/" + b.step("ledger", Codecs.utf8(), k -> "ledger"));
        assertThat(taken).isEqualTo("mail-1/ledger");
        return a.step("ledger", Codecs.utf8(), k -> "zombie ledger");
      })).isInstanceOf(LeaseLostException.class);
    } finally {
      restarted.close();
    }

    assertThat(mails).hasValue(1);
    assertThat(once(Once.builder(store)).execute(key, FP, Codecs.utf8(), a -> "never"))
        .isEqualTo("mail-1/ledger");
  }

  /** Where the first worker's thread is stopped, then interrupted after a takeover. */
  enum KillPoint { BEFORE_STEP, AFTER_EFFECT, AFTER_STEP, INSIDE_COMPENSATION }

  static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> killPoints() {
    List<org.junit.jupiter.params.provider.Arguments> points = new ArrayList<>();
    for (KillPoint point : new KillPoint[] {
        KillPoint.BEFORE_STEP, KillPoint.AFTER_EFFECT, KillPoint.AFTER_STEP}) {
      for (int step = 0; step < 3; step++) {
        points.add(org.junit.jupiter.params.provider.Arguments.of(point, step));
      }
    }
    points.add(org.junit.jupiter.params.provider.Arguments.of(KillPoint.INSIDE_COMPENSATION, 0));
    points.add(org.junit.jupiter.params.provider.Arguments.of(KillPoint.INSIDE_COMPENSATION, 1));
    return points.stream();
  }

  /**
   * A three-step saga on a real thread, stopped at {@code point} of step {@code at}, taken over
   * on another thread once its lease passed, then interrupted (its thread "killed"). Each
   * step's effect happens once (reconciled by the step key), each compensation once (the
   * refund API deduplicates on the compensation key, as the Step javadoc asks).
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0} at step {1}")
  @org.junit.jupiter.params.provider.MethodSource("killPoints")
  void aSagaWhoseWorkerIsKilledAnywhereRunsEachEffectOnce(KillPoint point, int at)
      throws Exception {
    IdempotencyKey key = newKey();
    boolean fails = point == KillPoint.INSIDE_COMPENSATION;
    java.util.Map<String, Integer> effects = new java.util.concurrent.ConcurrentHashMap<>();
    Set<String> refunds = java.util.concurrent.ConcurrentHashMap.newKeySet();
    AtomicInteger refundCalls = new AtomicInteger();
    CountDownLatch reached = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    Once once = once(Once.builder(store)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class)));
    Thread[] first = new Thread[1];

    Callable<String> saga = () -> once.execute(key, FP, Codecs.utf8(), a -> {
      boolean killable = Thread.currentThread() == first[0];
      StringBuilder out = new StringBuilder();
      for (int s = 0; s < 3; s++) {
        int step = s;
        String name = "s" + step;
        if (killable && point == KillPoint.BEFORE_STEP && step == at) {
          stop(reached, never);
        }
        out.append(a.step(dev.once.Step.of(name, Codecs.utf8())
            .reconcile(k -> effects.containsKey(k) ? Optional.of(name + "-done")
                : Optional.empty())
            .compensate((r, k) -> {
              refundCalls.incrementAndGet();
              refunds.add(k);
              if (killable && point == KillPoint.INSIDE_COMPENSATION && step == at) {
                stop(reached, never);
              }
            }), k -> {
              a.ensureLease();
              effects.merge(k, 1, Integer::sum);
              if (killable && point == KillPoint.AFTER_EFFECT && step == at) {
                stop(reached, never);
              }
              return name + "-done";
            }));
        if (killable && point == KillPoint.AFTER_STEP && step == at) {
          stop(reached, never);
        }
        if (fails && step == 1) {
          throw new IllegalArgumentException("declined");
        }
      }
      return out.toString();
    });

    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<String> stopped = threads.submit(() -> {
        first[0] = Thread.currentThread();
        return saga.call();
      });
      assertThat(reached.await(30, TimeUnit.SECONDS)).as("the first worker stopped").isTrue();
      clock.advance(LEASE.plusSeconds(1));
      Future<String> takeover = threads.submit(saga);
      String result = null;
      try {
        result = takeover.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        assertThat(fails).as("only the failing saga throws: %s", e.getCause()).isTrue();
      }
      stopped.cancel(true); // the stopped worker's thread is interrupted: it is killed
      try {
        stopped.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException
          | java.util.concurrent.CancellationException expected) {
        // killed
      }

      assertThat(effects.values()).as("effects per step").allMatch(n -> n == 1);
      if (fails) {
        assertThat(refunds).as("each completed step undone once").hasSize(2);
        assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "never"))
            .isInstanceOfSatisfying(ReplayedFailureException.class, e -> assertThat(
                e.failureMessage()).isEqualTo("declined (compensated: s1, s0)"));
      } else {
        assertThat(effects).hasSize(3);
        assertThat(result).isEqualTo("s0-dones1-dones2-done");
        assertThat(once.execute(key, FP, Codecs.utf8(), a -> "never")).isEqualTo(result);
      }
    } finally {
      threads.shutdownNow();
    }
  }

  /** Stops this thread until it is interrupted (killed): it never goes on. */
  private void stop(CountDownLatch reached, CountDownLatch never) {
    reached.countDown();
    try {
      never.await();
    } catch (InterruptedException e) {
      throw new IllegalStateException("killed");
    }
    throw new IllegalStateException("cannot happen: nobody releases the latch");
  }

  @Test
  void aReconciledStepAndACompensatedSagaRunEachEffectOnce() {
    IdempotencyKey key = newKey();
    List<String> effects = new ArrayList<>();
    Once once = once(Once.builder(store)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class)));
    dev.once.Step<String> charge = dev.once.Step.of("charge", Codecs.utf8())
        .reconcile(k -> effects.contains("charge") ? Optional.of("found") : Optional.empty())
        .compensate((r, k) -> effects.add("refund " + r));

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> a.step(charge, k -> {
      effects.add("charge");
      throw new IllegalStateException("died before journaling"); // retryable
    }))).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      a.step(charge, k -> {
        effects.add("charge again");
        return "charged";
      });
      throw new IllegalArgumentException("card declined later");
    })).isInstanceOf(IllegalArgumentException.class);

    assertThat(effects).containsExactly("charge", "refund found");
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "never"))
        .isInstanceOfSatisfying(ReplayedFailureException.class, e ->
            assertThat(e.failureMessage()).isEqualTo("card declined later (compensated: charge)"));
  }
}
