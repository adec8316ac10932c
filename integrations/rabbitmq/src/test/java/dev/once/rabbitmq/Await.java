package dev.once.rabbitmq;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Waits for delivery by the broker: polls a condition until it holds, failing after a bound. */
final class Await {

  static final Duration DEFAULT = Duration.ofSeconds(30);

  private Await() {}

  static void until(String what, BooleanSupplier condition) {
    until(what, DEFAULT, condition, () -> "");
  }

  static void until(String what, BooleanSupplier condition, Supplier<String> state) {
    until(what, DEFAULT, condition, state);
  }

  static void until(String what, Duration bound, BooleanSupplier condition,
      Supplier<String> state) {
    long deadline = System.nanoTime() + bound.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + bound + " waiting for " + what + "; "
            + state.get());
      }
      try {
        Thread.sleep(20); // polling for delivery, not waiting for time to pass
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for " + what, e);
      }
    }
  }
}
