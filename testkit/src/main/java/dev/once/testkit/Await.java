package dev.once.testkit;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for something another thread or process does (a broker delivering, a consumer settling):
 * polls a condition until it holds, and fails the test after a bound. Tests wait with it instead of
 * sleeping for time to pass.
 */
public final class Await {

  /** How long {@link #until(String, BooleanSupplier)} waits: generous, for loaded machines. */
  public static final Duration DEFAULT = Duration.ofSeconds(30);

  private static final long POLL_MILLIS = 20;

  private Await() {}

  /**
   * Polls {@code condition} until it holds; fails after {@link #DEFAULT}.
   *
   * @param what what is awaited, for the failure message
   * @param condition checked every few milliseconds on the calling thread
   * @throws AssertionError if the condition does not hold in time, or the thread is interrupted
   */
  public static void until(String what, BooleanSupplier condition) {
    until(what, DEFAULT, condition, () -> "");
  }

  /**
   * Polls {@code condition} until it holds; fails after {@link #DEFAULT}, describing {@code state}.
   *
   * @param what what is awaited, for the failure message
   * @param condition checked every few milliseconds on the calling thread
   * @param state what to show of the current state if the wait fails
   * @throws AssertionError if the condition does not hold in time, or the thread is interrupted
   */
  public static void until(String what, BooleanSupplier condition, Supplier<String> state) {
    until(what, DEFAULT, condition, state);
  }

  /**
   * Polls {@code condition} until it holds; fails after {@code bound}, describing {@code state}.
   *
   * @param what what is awaited, for the failure message
   * @param bound how long to wait at most
   * @param condition checked every few milliseconds on the calling thread
   * @param state what to show of the current state if the wait fails
   * @throws AssertionError if the condition does not hold in time, or the thread is interrupted
   */
  public static void until(String what, Duration bound, BooleanSupplier condition,
      Supplier<String> state) {
    Objects.requireNonNull(condition, "condition");
    Objects.requireNonNull(state, "state");
    long deadline = System.nanoTime() + bound.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + bound + " waiting for " + what + "; "
            + state.get());
      }
      try {
        Thread.sleep(POLL_MILLIS); // polling for the condition, not waiting for time to pass
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for " + what, e);
      }
    }
  }
}
