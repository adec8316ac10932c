package dev.once.spring.internal;

import dev.once.Once;
import dev.once.Scheduler;
import java.time.Duration;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.beans.factory.DisposableBean;

/**
 * Two daemon threads for what Once does in the background in a Spring application: lease heartbeats
 * ({@code once.heartbeat}) and {@link dev.once.Maintenance} ({@code once.maintenance.*}: reap stale
 * leases, purge expired records, in bounded batches). Shut down with the context.
 */
public final class OnceBackgroundTasks implements DisposableBean {

  private static final AtomicInteger COUNT = new AtomicInteger();

  private final ScheduledExecutorService executor;
  private volatile Scheduler.Task maintenance;

  /** A scheduler with two daemon threads, started on first use. */
  public OnceBackgroundTasks() {
    ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(2, task -> {
      Thread thread = new Thread(task, "once-background-" + COUNT.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    });
    // A heartbeat is cancelled when its call ends: dropped at once, not kept (with its attempt)
    // until it would have fired.
    pool.setRemoveOnCancelPolicy(true);
    this.executor = pool;
  }

  /** The scheduler heartbeats and maintenance run on. */
  public Scheduler scheduler() {
    return Scheduler.of(executor);
  }

  /** Runs {@code once}'s maintenance every {@code interval}, from one interval after now. */
  public void scheduleMaintenance(Once once, Duration interval) {
    this.maintenance = once.maintenance().schedule(scheduler(), interval);
  }

  @Override
  public void destroy() throws InterruptedException {
    Scheduler.Task task = maintenance;
    if (task != null) {
      task.cancel();
    }
    executor.shutdownNow();
    executor.awaitTermination(5, TimeUnit.SECONDS);
  }

  @Override
  public String toString() {
    return "OnceBackgroundTasks[" + (maintenance != null ? "maintenance" : "idle") + "]";
  }
}
