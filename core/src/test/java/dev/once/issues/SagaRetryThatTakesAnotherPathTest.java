package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.Step;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 2: compensations existed only as lambdas registered when the current attempt
 * reached a step. Attempt 1 reserved and charged, shipping failed terminally, the refund threw:
 * the failure was committed to the journal and the key released. Attempt 2 then failed before its
 * first step (or returned early, or skipped a step): the committed failure was stored as final and
 * nothing was compensated — the customer stayed charged and the stock reserved. Now the journal
 * drives compensation: steps declared with {@link Once.Builder#steps} are undone by any attempt.
 */
class SagaRetryThatTakesAnotherPathTest {

  static class TransientGlitch extends RuntimeException {
    TransientGlitch() {
      super("connection reset");
    }
  }

  private final InMemoryStore store = new InMemoryStore();
  private final List<String> effects = new CopyOnWriteArrayList<>();
  private final AtomicInteger refundFailures = new AtomicInteger(1);
  private final IdempotencyKey key = IdempotencyKey.of("orders", "o-9");

  private final Step<String> reserve = Step.of("reserve", Codecs.utf8())
      .compensate((r, k) -> effects.add("release " + r));
  private final Step<String> charge = Step.of("charge", Codecs.utf8())
      .compensate((r, k) -> {
        if (refundFailures.getAndDecrement() > 0) {
          throw new IllegalStateException("gateway down");
        }
        effects.add("refund " + r);
      });
  private final Step<String> ship = Step.of("ship", Codecs.utf8());

  private Once once(Step<?>... declared) {
    return Once.builder(store).steps(declared)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
  }

  private String firstAttempt(Once once) {
    return once.execute(key, Fingerprint.of("o-9"), Codecs.utf8(), a -> {
      a.step(reserve, k -> "stock-1");
      a.step(charge, k -> "ch-1");
      return a.step(ship, k -> {
        throw new IllegalArgumentException("address rejected");
      });
    });
  }

  @Test
  void aRetryThatFailsBeforeItsFirstStepStillCompensatesWhatTheJournalSaysIsDone() {
    Once once = once(reserve, charge, ship);
    assertThatThrownBy(() -> firstAttempt(once)).isInstanceOf(IllegalArgumentException.class);
    assertThat(effects).isEmpty(); // the refund threw; released for a retry that compensates
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.FAILED);

    // Attempt 2 fails with a transient error before it reaches any step.
    assertThatThrownBy(() -> once.execute(key, Fingerprint.of("o-9"), Codecs.utf8(), a -> {
      throw new TransientGlitch();
    })).isInstanceOf(TransientGlitch.class);

    assertThat(effects).containsExactly("refund ch-1", "release stock-1");
    var record = store.find(key).orElseThrow();
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(record.outcome().failureMessage())
        .isEqualTo("address rejected (compensated: charge, reserve)");
  }

  @Test
  void aRetryThatReturnsEarlyStillCompensates() {
    Once once = once(reserve, charge, ship);
    assertThatThrownBy(() -> firstAttempt(once)).isInstanceOf(IllegalArgumentException.class);

    assertThatThrownBy(() -> once.execute(key, Fingerprint.of("o-9"), Codecs.utf8(),
        a -> "nothing to do")).isInstanceOf(ReplayedFailureException.class);

    assertThat(effects).containsExactly("refund ch-1", "release stock-1");
  }

  @Test
  void aCompensableStepNeitherReachedNorDeclaredKeepsTheFailureOpenThenNamesItUncompensated() {
    refundFailures.set(1);
    Once once = Once.builder(store).compensationAttempts(3)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build(); // nothing declared
    assertThatThrownBy(() -> firstAttempt(once)).isInstanceOf(IllegalArgumentException.class);

    for (int retry = 0; retry < 2; retry++) {
      assertThatThrownBy(() -> once.execute(key, Fingerprint.of("o-9"), Codecs.utf8(), a -> {
        throw new TransientGlitch();
      })).isInstanceOf(TransientGlitch.class);
    }

    var record = store.find(key).orElseThrow();
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.outcome().failureMessage())
        .isEqualTo("address rejected (NOT compensated: charge, reserve)");
    assertThat(effects).isEmpty();
  }

  /**
   * Found in review: a retry of work already committed to a terminal failure went another way
   * and ran a step the first attempt never reached (an e-mail "your order ships today" for an
   * order being undone). Such a retry runs no new step: the committed failure is thrown at it.
   */
  @Test
  void aRetryCommittedToAFailureDoesNotRunANewStep() {
    Step<String> email = Step.of("email", Codecs.utf8());
    Once once = once(reserve, charge, ship);
    assertThatThrownBy(() -> once.execute(key, Fingerprint.of("o-9"), Codecs.utf8(), a -> {
      a.step(reserve, k -> "stock-1");
      a.step(charge, k -> "ch-1");
      throw new IllegalArgumentException("address rejected");
    })).isInstanceOf(IllegalArgumentException.class);

    // The retry takes another branch: a step the first attempt never reached.
    assertThatThrownBy(() -> once.execute(key, Fingerprint.of("o-9"), Codecs.utf8(), a -> {
      a.step(reserve, k -> "stock-1");
      return a.step(email, k -> {
        effects.add("email: your order ships today");
        return "sent";
      });
    })).isInstanceOf(RuntimeException.class);

    assertThat(effects).containsExactly("refund ch-1", "release stock-1");
  }

  @Test
  void twoDifferentStepsWithOneNameAreRefused() {
    assertThatThrownBy(() -> Once.builder(store).steps(charge, Step.of("charge", Codecs.utf8())))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'charge'");
  }
}
