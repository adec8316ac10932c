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

  /**
   * Runs {@code task} every {@code period}, first after one period, until cancelled. A run that
   * throws must not end the later runs: an implementation catches and logs it.
   */
  Task scheduleAtFixedRate(Runnable task, Duration period);

  /**
   * A scheduler over an executor the caller owns (and shuts down). A run that throws is logged
   * and the next run happens as planned: {@code scheduleAtFixedRate} alone would stop every later
   * run silently, and with them a lease's heartbeats.
   */
  static Scheduler of(ScheduledExecutorService executor) {
    Objects.requireNonNull(executor, "executor");
    return (task, period) -> {
      Objects.requireNonNull(task, "task");
      long nanos = period.toNanos();
      Runnable guarded = () -> {
        try {
          task.run();
        } catch (Throwable t) {
          System.getLogger(Scheduler.class.getName()).log(System.Logger.Level.WARNING,
              "a scheduled task threw; it runs again at its next period", t);
          if (t instanceof VirtualMachineError error) {
            throw error; // the JVM itself is failing (out of memory): do not hide it
          }
        }
      };
      ScheduledFuture<?> future =
          executor.scheduleAtFixedRate(guarded, nanos, nanos, TimeUnit.NANOSECONDS);
      return () -> future.cancel(false);
    };
  }
}
