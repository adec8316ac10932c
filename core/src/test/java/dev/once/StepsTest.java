package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.Step;
import dev.once.StepFailedException;
import dev.once.spi.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Durable steps (issue 16) on the in-memory store: each step's effect at most once per key across
 * retries and takeovers, exactly once with a reconciler, compensations once each. A "crash" is
 * the lease passing while the work is held, and a second worker taking over.
 */
class StepsTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("order-1");

  /** A terminal failure of the business. */
  static final class OutOfStock extends RuntimeException {
    OutOfStock(String message) {
      super(message);
    }
  }

  private final ManualClock clock = new ManualClock();
  private final InMemoryStore store = new InMemoryStore();
  private final IdempotencyKey key = IdempotencyKey.of("orders.place", "o-1");
  private final Once once = Once.builder(store).clock(clock).lease(LEASE)
      .failurePolicy(FailurePolicy.retryAll().terminalOn(OutOfStock.class)).build();
  private final List<String> effects = new ArrayList<>();

  private String effect(String what) {
    effects.add(what);
    return what + "#" + effects.size();
  }

  @Test
  void aJournaledStepIsReplayedToATakeoverAndTheZombiesNextStepIsFenced() {
    AtomicInteger attempts = new AtomicInteger();
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), first -> {
      attempts.incrementAndGet();
      String mail = first.step("mail", Codecs.utf8(), k -> effect("mail"));
      // This worker freezes past its lease; another takes the key over and finishes.
      clock.advance(LEASE);
      String result = once.execute(key, FP, Codecs.utf8(), second -> {
        attempts.incrementAndGet();
        assertThat(second.takeover()).isTrue();
        String again = second.step("mail", Codecs.utf8(), k -> effect("mail"));
        String ledger = second.step("ledger", Codecs.utf8(), k -> effect("ledger"));
        return again + "+" + ledger;
      });
      assertThat(result).isEqualTo("mail#1+ledger#2");
      // The zombie wakes: its lease has passed by its own clock, so its next step does not even
      // start (issue 28; before, it ran and only its journal write was fenced).
      return first.step("ledger", Codecs.utf8(), k -> effect("ledger-zombie")) + mail;
    })).isInstanceOf(LeaseLostException.class);

    assertThat(attempts).hasValue(2);
    assertThat(effects).containsExactly("mail", "ledger");
    assertThat(once.execute(key, FP, Codecs.utf8(), a -> "never")).isEqualTo("mail#1+ledger#2");
  }

  @Test
  void aStepWhoseWorkerDiedAfterTheEffectIsReconciledNotRunAgain() {
    List<String> downstream = new ArrayList<>(); // what the downstream knows, by step key
    Step<String> send = Step.of("send-mail", Codecs.utf8())
        .reconcile(k -> downstream.contains(k) ? Optional.of("found:" + k) : Optional.empty());

    // The worker dies between the downstream call and the journal write.
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> a.step(send, k -> {
      downstream.add(k);
      effects.add("sent");
      throw new VirtualWorkerDeath();
    }))).isInstanceOf(VirtualWorkerDeath.class);

    String result = once.execute(key, FP, Codecs.utf8(), a -> a.step(send, k -> {
      effects.add("sent again");
      return "sent:" + k;
    }));

    assertThat(effects).containsExactly("sent");
    assertThat(result).startsWith("found:once-");
  }

  @Test
  void withoutAReconcilerAStepWhoseWorkerDiedRunsAgain() {
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> a.step("send-mail",
        Codecs.utf8(), k -> {
          effects.add("sent");
          throw new VirtualWorkerDeath();
        }))).isInstanceOf(VirtualWorkerDeath.class);

    once.execute(key, FP, Codecs.utf8(), a -> a.step("send-mail", Codecs.utf8(), k -> {
      effects.add("sent");
      return "ok";
    }));

    assertThat(effects).containsExactly("sent", "sent");
  }

  @Test
  void aReconcilerThatFindsNothingRunsTheStep() {
    Step<String> send = Step.of("send", Codecs.utf8()).reconcile(k -> Optional.empty());
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> a.step(send, k -> {
      throw new VirtualWorkerDeath(); // died before the downstream call
    }))).isInstanceOf(VirtualWorkerDeath.class);

    assertThat(once.execute(key, FP, Codecs.utf8(), a -> a.step(send, k -> effect("sent"))))
        .isEqualTo("sent#1");
  }

  @Test
  void aTerminalFailureCompensatesTheCompletedStepsInReverseOrderOnceEach() {
    AtomicInteger refundFailures = new AtomicInteger(1);
    Step<String> reserve = Step.of("reserve", Codecs.utf8())
        .compensate((r, k) -> effects.add("release " + r));
    Step<String> charge = Step.of("charge", Codecs.utf8()).compensate((r, k) -> {
      if (refundFailures.getAndDecrement() > 0) {
        throw new IllegalStateException("refund service down");
      }
      effects.add("refund " + r);
    });
    Step<String> ship = Step.of("ship", Codecs.utf8());
    Work saga = () -> once.execute(key, FP, Codecs.utf8(), a -> {
      String r = a.step(reserve, k -> effect("reserve"));
      String c = a.step(charge, k -> effect("charge"));
      return a.step(ship, k -> {
        throw new OutOfStock("warehouse empty");
      }) + r + c;
    });

    // The refund fails the first time: nothing is stored, the key is released for a retry.
    assertThatThrownBy(saga::run).isInstanceOf(OutOfStock.class);
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.FAILED);
    assertThat(effects).containsExactly("reserve", "charge");

    // The retry replays the steps (no effect runs again), then compensates in reverse order.
    assertThatThrownBy(saga::run).isInstanceOf(StepFailedException.class);
    assertThat(effects).containsExactly("reserve", "charge", "refund charge#2",
        "release reserve#1");

    // Finished: duplicates get the failure and what was compensated; nothing runs again.
    assertThatThrownBy(saga::run).isInstanceOfSatisfying(ReplayedFailureException.class, e -> {
      assertThat(e.failureType()).isEqualTo(OutOfStock.class.getName());
      assertThat(e.failureMessage()).isEqualTo("warehouse empty (compensated: charge, reserve)");
    });
    assertThat(effects).hasSize(4);
  }

  @Test
  void aCompensationInterruptedByATakeoverRunsOnlyWhatIsLeftAndTheFailureStaysCommitted() {
    AtomicInteger runs = new AtomicInteger();
    List<String> releaseKeys = new ArrayList<>();
    Step<String> charge = Step.of("charge", Codecs.utf8())
        .compensate((r, k) -> effects.add("refund"));
    Step<String>[] reserve = new Step[1];
    Work work = () -> once.execute(key, FP, Codecs.utf8(), a -> {
      a.step(reserve[0], k -> effect("reserve"));
      a.step(charge, k -> effect("charge"));
      if (runs.incrementAndGet() == 1) {
        throw new OutOfStock("gone");
      }
      return "placed"; // the failure is committed: this attempt must not succeed
    });
    reserve[0] = Step.of("reserve", Codecs.utf8()).compensate((r, k) -> {
      releaseKeys.add(k);
      if (releaseKeys.size() == 1) {
        // The first worker froze here, mid-compensation, past its lease: another takes over.
        clock.advance(LEASE);
        assertThatThrownBy(work::run).isInstanceOf(ReplayedFailureException.class)
            .hasMessageContaining("gone");
        effects.add("release by the frozen worker");
      } else {
        effects.add("release");
      }
    });

    assertThatThrownBy(work::run).isInstanceOf(OutOfStock.class)
        .satisfies(e -> assertThat(e.getSuppressed()).isNotEmpty()); // its writes were fenced

    // "refund" ran once; the takeover ran only the compensation left ("release"); the frozen
    // worker's late release carries the same compensation key, for the downstream to dedupe.
    assertThat(effects).containsExactly("reserve", "charge", "refund", "release",
        "release by the frozen worker");
    assertThat(releaseKeys).hasSize(2).containsOnly(releaseKeys.get(0));
    assertThat(runs).hasValue(2);
    assertThatThrownBy(work::run).isInstanceOfSatisfying(ReplayedFailureException.class,
        e -> assertThat(e.failureMessage()).isEqualTo("gone (compensated: charge, reserve)"));
    assertThat(effects).hasSize(5);
  }

  @Test
  void aRetryableFailureInAStepRunsItAgainAndATerminalOneIsJournaled() {
    AtomicInteger calls = new AtomicInteger();
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> a.step("call",
        Codecs.utf8(), k -> {
          calls.incrementAndGet();
          throw new IllegalStateException("timeout");
        }))).isInstanceOf(IllegalStateException.class);
    assertThat(once.execute(key, FP, Codecs.utf8(), a -> a.step("call", Codecs.utf8(), k -> {
      calls.incrementAndGet();
      return "ok";
    }))).isEqualTo("ok");
    assertThat(calls).hasValue(2);
  }

  @Test
  void aResultTooLargeToJournalNeverRunsTheStepAgain() {
    Once small = Once.builder(store).clock(clock).lease(LEASE).maxPayloadBytes(200).build();
    String big = "x".repeat(500);
    AtomicInteger runs = new AtomicInteger();

    assertThatThrownBy(() -> small.execute(key, FP, Codecs.utf8(), a -> {
      String value = a.step("export", Codecs.utf8(), k -> {
        runs.incrementAndGet();
        return big;
      });
      assertThat(value).isEqualTo(big); // this attempt has it
      throw new VirtualWorkerDeath();
    })).isInstanceOf(VirtualWorkerDeath.class);
    assertThatThrownBy(() -> small.execute(key, FP, Codecs.utf8(), a -> a.step("export",
        Codecs.utf8(), k -> {
          runs.incrementAndGet();
          return big;
        }))).isInstanceOf(OutcomeNotStoredException.class).hasMessageContaining("export");

    assertThat(runs).hasValue(1);
  }

  @Test
  void stepsAreBoundedAndNamedAndNothingRunsPastTheBound() {
    AtomicInteger ran = new AtomicInteger();
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      for (int i = 0; i <= 64; i++) {
        a.step("s" + i, Codecs.utf8(), k -> "r" + ran.incrementAndGet());
      }
      return "x";
    })).isInstanceOf(IllegalStateException.class).hasMessageContaining("64 steps");
    assertThat(ran).hasValue(64);
    assertThatThrownBy(() -> Step.of("", Codecs.utf8())).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Step.of("a\nb", Codecs.utf8()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Step.of("x".repeat(101), Codecs.utf8()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void checkpointsKeepWorkingBesideSteps() {
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      a.checkpoint("page", new byte[] {7});
      a.step("first", Codecs.utf8(), k -> effect("first"));
      a.checkpoint("page", new byte[] {8});
      throw new VirtualWorkerDeath();
    })).isInstanceOf(VirtualWorkerDeath.class);

    once.execute(key, FP, Codecs.utf8(), a -> {
      assertThat(a.lastCheckpoint()).hasValueSatisfying(c -> assertThat(c.data())
          .containsExactly(8));
      return a.step("first", Codecs.utf8(), k -> effect("first again"));
    });
    assertThat(effects).containsExactly("first");
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("orders.place", "o-2"), FP,
        Codecs.utf8(), a -> {
          a.checkpoint("once:journal", new byte[0]);
          return "x";
        })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reserved");
  }

  /** Stands for a worker dying at this point: an Error, which releases the claim (retryable). */
  static final class VirtualWorkerDeath extends Error {
    VirtualWorkerDeath() {
      super("worker died", null, false, false);
    }
  }

  @FunctionalInterface
  interface Work {
    void run();
  }
}
