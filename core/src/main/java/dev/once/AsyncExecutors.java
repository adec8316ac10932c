package dev.once;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The default of {@link Once.Builder#asyncExecutor}, made when first used. */
final class AsyncExecutors {

  private AsyncExecutors() {}

  static final Executor DEFAULT = create();

  private static Executor create() {
    try {
      // Java 21+: a virtual thread per task, found reflectively since core compiles for Java 17.
      return (ExecutorService) java.util.concurrent.Executors.class
          .getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
    } catch (ReflectiveOperationException | RuntimeException notThere) {
      AtomicInteger count = new AtomicInteger();
      ThreadPoolExecutor pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
          new SynchronousQueue<>(), task -> {
            Thread t = new Thread(task, "once-async-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
          });
      return pool;
    }
  }
}
