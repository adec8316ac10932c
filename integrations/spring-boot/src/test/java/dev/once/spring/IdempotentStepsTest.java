package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Attempt;
import dev.once.Codecs;
import dev.once.ReplayedFailureException;
import dev.once.Step;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Durable steps in an {@link Idempotent} method through {@link IdempotentAttempt#current()}, on a
 * real SQLite store: a retried method does not repeat a step, a terminal failure compensates.
 */
class IdempotentStepsTest {

  /** A failure no retry fixes. */
  public static final class Declined extends RuntimeException {
    public Declined(String message) {
      super(message);
    }
  }

  /** Places orders in steps: a mail nobody can deduplicate, then a charge that may time out. */
  public static class Orders {
    final List<String> effects = new CopyOnWriteArrayList<>();
    final AtomicInteger chargeCalls = new AtomicInteger();

    @Idempotent(key = "#id", terminalOn = Declined.class)
    public String place(String id, boolean declined) {
      Attempt attempt = IdempotentAttempt.current().orElseThrow();
      String mail = attempt.step(Step.of("mail", Codecs.utf8())
          .compensate((r, k) -> effects.add("apology " + id)), k -> {
            effects.add("mail " + id);
            return "mailed";
          });
      String charge = attempt.step("charge", Codecs.utf8(), k -> {
        if (chargeCalls.incrementAndGet() == 1) {
          throw new IllegalStateException("gateway timeout"); // retryable
        }
        effects.add("charge " + id);
        return "charged";
      });
      if (declined) {
        throw new Declined("fraud check failed");
      }
      return mail + "+" + charge;
    }

    public List<String> effects() {
      return effects;
    }

    public void chargeTimesOutFirst(boolean timesOut) {
      chargeCalls.set(timesOut ? 0 : 1);
    }

    public boolean attemptOutside() {
      return IdempotentAttempt.current().isPresent();
    }
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
      .withBean(DataSource.class, TestDatabases::sqlite)
      .withPropertyValues("once.jdbc.create-schema=true")
      .withBean(Orders.class);

  @Test
  void aRetriedMethodDoesNotRepeatItsCompletedSteps() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);

      assertThatThrownBy(() -> orders.place("o-1", false))
          .isInstanceOf(IllegalStateException.class);
      assertThat(orders.place("o-1", false)).isEqualTo("mailed+charged");
      assertThat(orders.place("o-1", false)).isEqualTo("mailed+charged");

      assertThat(orders.effects()).containsExactly("mail o-1", "charge o-1");
      assertThat(orders.attemptOutside()).isFalse();
      assertThat(IdempotentAttempt.current()).isEmpty();
    });
  }

  @Test
  void aTerminalFailureCompensatesTheCompletedStepsOnce() {
    runner.run(context -> {
      Orders orders = context.getBean(Orders.class);
      orders.chargeTimesOutFirst(false);

      assertThatThrownBy(() -> orders.place("o-2", true)).isInstanceOf(Declined.class);
      assertThatThrownBy(() -> orders.place("o-2", true))
          .isInstanceOfSatisfying(ReplayedFailureException.class, e -> assertThat(
              e.failureMessage()).isEqualTo("fraud check failed (compensated: mail)"));

      assertThat(orders.effects()).containsExactly("mail o-2", "charge o-2", "apology o-2");
    });
  }
}
