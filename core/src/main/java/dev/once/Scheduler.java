package dev.once;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs a task periodically: lease heartbeats and scheduled maintenance. Injectable so that tests
 * trigger ticks by hand instead of waiting.
 */
@FunctionalInterface
public interface Scheduler {

  /** A scheduled task. */
  @FunctionalInterface
  interface Task {
    /** Stops further runs; a run in progress finishes. */
    void cancel();
  }

  /** Runs {@code task} every {@code period}, first after one period. */
  Task scheduleAtFixedRate(Runnable task, Duration period);

  /** A scheduler over an executor the caller owns (and shuts down). */
  static Scheduler of(ScheduledExecutorService executor) {
    Objects.requireNonNull(executor, "executor");
    return (task, period) -> {
      long nanos = period.toNanos();
      ScheduledFuture<?> future =
          executor.scheduleAtFixedRate(task, nanos, nanos, TimeUnit.NANOSECONDS);
      return () -> future.cancel(false);
    };
  }
}
