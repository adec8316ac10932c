package dev.once.reactor;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.Executor;

/**
 * An {@code asyncExecutor} whose tasks the test runs, on its own thread, when it says: each test
 * then says exactly when the claim is made and when the outcome is stored.
 */
final class HandExecutor implements Executor {

  private final Queue<Runnable> tasks = new ArrayDeque<>();

  @Override
  public synchronized void execute(Runnable task) {
    tasks.add(task);
  }

  /** Runs every task, those the tasks queue included, until none is left. */
  void runAll() {
    for (Runnable task = next(); task != null; task = next()) {
      task.run();
    }
  }

  synchronized int pending() {
    return tasks.size();
  }

  private synchronized Runnable next() {
    return tasks.poll();
  }
}
