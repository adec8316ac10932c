package dev.once.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Attempt;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Step;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * A property test of durable steps over a real store: a three-step saga whose steps each make an
 * effect no downstream deduplicates, with a reconciler that asks the downstream. Workers die or
 * freeze (become zombies) at random points — before a step's effect, or after it but before its
 * result is journaled — and are taken over once their lease passes. Whatever the interleaving:
 *
 * <ul>
 *   <li>every step's effect happens exactly once (a zombie is fenced: {@code ensureLease} before
 *       each effect, and its journal writes are refused),
 *   <li>no journaled result is lost: the key's outcome is built from the first result of each step,
 *   <li>the key finishes COMPLETED and replays that outcome.
 * </ul>
 *
 * Extend it with a store over the real server, as for {@link StoreConformanceSuite}.
 */
public abstract class StepModelProperties {

  private static final Duration LEASE = Duration.ofSeconds(10);
  private static final int STEPS = 3;
  private static final Fingerprint FP = Fingerprint.of("saga");

  private IdempotencyStore store;

  /** A store over the real server; called once per property, closed after it. */
  protected abstract IdempotencyStore newStore();

  @BeforeProperty
  void openStore() {
    store = newStore();
  }

  @AfterProperty
  void closeStore() {
    store.close();
  }

  /** Where a worker stops: at a step, before its effect or after it (before the journal). */
  enum Phase { BEFORE_EFFECT, AFTER_EFFECT }

  /** What the stopped worker does once its successor is done: nothing more, or go on (zombie). */
  enum Fate { DIES, RESUMES }

  /** One worker's interruption. */
  record Interruption(int step, Phase phase, Fate fate) {}

  @Provide
  Arbitrary<List<Interruption>> plans() {
    Arbitrary<Interruption> one = Combinators.combine(Arbitraries.integers().between(0, STEPS - 1),
        Arbitraries.of(Phase.class), Arbitraries.of(Fate.class)).as(Interruption::new);
    return one.list().ofMaxSize(5);
  }

  @Property(tries = 200)
  void everyStepsEffectHappensExactlyOnceAndNoJournaledResultIsLost(
      @ForAll("plans") List<Interruption> plan) {
    new Run(plan).play();
  }

  /** One saga: a key of its own, a clock, the downstream's effects per step key. */
  private final class Run {
    final List<Interruption> plan;
    final ManualClock clock = new ManualClock();
    final IdempotencyKey key = IdempotencyKey.of("steps." + UUID.randomUUID().toString()
        .substring(0, 8), "saga");
    final Once once = Once.builder(store).clock(clock).lease(LEASE).build();
    final Map<String, Integer> downstream = new ConcurrentHashMap<>();

    Run(List<Interruption> plan) {
      this.plan = plan;
    }

    void play() {
      try {
        worker(0);
      } catch (WorkerStopped | dev.once.LeaseLostException expected) {
        // The first worker died, or resumed as a zombie and was fenced; a successor finished.
      }
      String outcome = once.execute(key, FP, Codecs.utf8(), a -> {
        throw new AssertionError("the saga finished; it must not run again");
      });
      assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
      assertThat(downstream).as("effects per step (plan %s)", plan).hasSize(STEPS)
          .allSatisfy((stepKey, effects) -> assertThat(effects).as(stepKey).isOne());
      assertThat(outcome).as("the outcome is built from each step's one result")
          .isEqualTo("effect-0#1|effect-1#1|effect-2#1");
    }

    /** Worker {@code i} runs the saga, interrupted as the plan says. */
    String worker(int i) {
      Interruption stop = i < plan.size() ? plan.get(i) : null;
      return once.execute(key, FP, Codecs.utf8(), attempt -> {
        StringBuilder results = new StringBuilder();
        for (int s = 0; s < STEPS; s++) {
          int step = s;
          String stepName = "effect-" + step;
          String result = attempt.step(Step.of(stepName, Codecs.utf8())
              .reconcile(k -> Optional.ofNullable(downstream.get(k))
                  .map(n -> stepName + "#" + n)), k -> {
                interrupt(i, stop, step, Phase.BEFORE_EFFECT, attempt);
                attempt.ensureLease(); // a zombie resuming here is fenced before the effect
                int n = downstream.merge(k, 1, Integer::sum);
                interrupt(i, stop, step, Phase.AFTER_EFFECT, attempt);
                return stepName + "#" + n;
              });
          results.append(s == 0 ? "" : "|").append(result);
        }
        return results.toString();
      });
    }

    /**
     * At the planned point, worker {@code i} stops: its lease passes, the next worker takes over
     * and runs to its end (or its own interruption), then this one dies or resumes.
     */
    void interrupt(int i, Interruption stop, int step, Phase phase, Attempt attempt) {
      if (stop == null || stop.step() != step || stop.phase() != phase) {
        return;
      }
      clock.advance(LEASE.plusSeconds(1));
      try {
        worker(i + 1);
      } catch (WorkerStopped | dev.once.LeaseLostException successorStopped) {
        // The successor was interrupted in turn; a later one finished.
      }
      if (stop.fate() == Fate.DIES) {
        throw new WorkerStopped();
      }
    }
  }

  /** A worker that stopped for good: unwinds its stack, as its process would have ended. */
  static final class WorkerStopped extends Error {
    private static final long serialVersionUID = 1L;

    WorkerStopped() {
      super("worker stopped", null, false, false);
    }
  }
}
