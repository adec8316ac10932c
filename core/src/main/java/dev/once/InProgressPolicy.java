package dev.once;

import dev.once.support.Checks;
import java.time.Duration;
import java.util.Objects;

/**
 * What a duplicate does while the original is still running: {@link #reject()} at once with
 * {@link RequestInProgressException}, or {@link #waitUpTo(Duration)} with backoff, then replay the
 * outcome, take over if the lease passed, or reject.
 */
public final class InProgressPolicy {

  private static final InProgressPolicy REJECT = new InProgressPolicy(Duration.ZERO,
      Duration.ZERO, Duration.ZERO);

  private final Duration maxWait;
  private final Duration initialBackoff;
  private final Duration maxBackoff;

  private InProgressPolicy(Duration maxWait, Duration initialBackoff, Duration maxBackoff) {
    this.maxWait = maxWait;
    this.initialBackoff = initialBackoff;
    this.maxBackoff = maxBackoff;
  }

  /** Answer a duplicate at once with {@link RequestInProgressException}. The default. */
  public static InProgressPolicy reject() {
    return REJECT;
  }

  /** Poll up to {@code maxWait} with backoff from 10 ms, doubling, up to 500 ms a step. */
  public static InProgressPolicy waitUpTo(Duration maxWait) {
    return waitUpTo(maxWait, Duration.ofMillis(10), Duration.ofMillis(500));
  }

  /** Poll up to {@code maxWait}, first after {@code initialBackoff}, doubling up to {@code maxBackoff}. */
  public static InProgressPolicy waitUpTo(Duration maxWait, Duration initialBackoff,
      Duration maxBackoff) {
    Objects.requireNonNull(maxWait, "maxWait");
    Objects.requireNonNull(initialBackoff, "initialBackoff");
    Objects.requireNonNull(maxBackoff, "maxBackoff");
    Checks.positive(maxWait, "maxWait");
    Checks.positive(initialBackoff, "initialBackoff");
    if (maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException("maxBackoff must be at least initialBackoff");
    }
    return new InProgressPolicy(maxWait, initialBackoff, maxBackoff);
  }

  /** How long a duplicate waits at most; zero for {@link #reject()}. */
  public Duration maxWait() {
    return maxWait;
  }

  /** The first pause between polls. */
  public Duration initialBackoff() {
    return initialBackoff;
  }

  /** The longest pause between polls. */
  public Duration maxBackoff() {
    return maxBackoff;
  }

  /** Whether duplicates wait at all. */
  public boolean waits() {
    return !maxWait.isZero();
  }

  @Override
  public String toString() {
    return waits() ? "InProgressPolicy.waitUpTo(" + maxWait + ")" : "InProgressPolicy.reject()";
  }
}
