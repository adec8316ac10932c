package dev.once.kafka;

import dev.once.Scheduler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A heartbeat scheduler whose beats the test triggers ({@link #tick}), together with a
 * {@code ManualClock}: time passes only when the test says so, and so do the beats. Thread-safe.
 */
final class ManualScheduler implements Scheduler {

  private final List<Scheduled> tasks = new CopyOnWriteArrayList<>();

  @Override
  public Task scheduleAtFixedRate(Runnable task, Duration period) {
    Scheduled scheduled = new Scheduled(task);
    tasks.add(scheduled);
    return () -> tasks.remove(scheduled);
  }

  /** Runs every task not cancelled, once, on the calling thread. */
  void tick() {
    for (Scheduled scheduled : tasks) {
      scheduled.task.run();
    }
  }

  /** One schedule, removed by identity when cancelled. */
  private static final class Scheduled {
    final Runnable task;

    Scheduled(Runnable task) {
      this.task = task;
    }
  }
}
