package dev.once.issues;

import dev.once.Scheduler;
import dev.once.spi.IdempotencyStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;

/** Small parts the scenario tests share: beats run by hand, a store hook. */
final class TestParts {

  private TestParts() {}

  /** A heartbeat scheduler whose tasks run only when {@link #beat()} is called. */
  static final class HandScheduler implements Scheduler {
    private final List<Runnable> tasks = new CopyOnWriteArrayList<>();

    @Override
    public Task scheduleAtFixedRate(Runnable task, Duration period) {
      tasks.add(task);
      return () -> tasks.remove(task);
    }

    /** Runs every scheduled task once, on the calling thread. */
    void beat() {
      for (Runnable task : tasks) {
        task.run();
      }
    }

    int scheduled() {
      return tasks.size();
    }
  }

  /** Called before each store method; may throw, block or change the world. */
  interface Hook {
    void before(String method, Object[] args) throws Exception;
  }

  /** {@code store} with {@code hook} run before each of its methods. */
  static IdempotencyStore hooked(IdempotencyStore store, Hook hook) {
    return (IdempotencyStore) Proxy.newProxyInstance(IdempotencyStore.class.getClassLoader(),
        new Class<?>[] {IdempotencyStore.class}, (proxy, method, args) -> {
          hook.before(method.getName(), args);
          try {
            return method.invoke(store, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  /** Waits (up to 10 s) until {@code condition} holds; fails the test if it never does. */
  static void awaitTrue(BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("never happened: " + what);
      }
      Thread.onSpinWait();
      Thread.yield();
    }
  }
}
