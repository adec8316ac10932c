package dev.once.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;

/**
 * The two kinds of threads a race test runs its racers on: platform threads, and virtual threads
 * (JDK 21+). The library is built for Java 17, so virtual threads are reached reflectively; on a
 * JDK without them, {@link #VIRTUAL} aborts the test with a JUnit assumption, so that it is
 * reported as skipped rather than passed. A race test takes the kind as a parameter:
 *
 * <pre>{@code
 * @ParameterizedTest
 * @EnumSource(Racers.class)
 * void oneOfManyClaimsWins(Racers racers) throws Exception {
 *   ExecutorService pool = racers.pool(16);
 *   ...
 * }
 * }</pre>
 *
 * The conformance suite's race tests run this way, so a store passes them on both kinds when the
 * build runs on JDK 21+.
 */
public enum Racers {

  /** Platform threads, as before virtual threads. */
  PLATFORM,

  /** Virtual threads, JDK 21+; a test on an older JDK is skipped. */
  VIRTUAL;

  /** {@code Thread.ofVirtual}, or null before JDK 21. */
  private static final Method OF_VIRTUAL = method(Thread.class, "ofVirtual");
  /** {@code Executors.newThreadPerTaskExecutor}, or null before JDK 21. */
  private static final Method THREAD_PER_TASK =
      method(Executors.class, "newThreadPerTaskExecutor", ThreadFactory.class);

  /** Whether this JVM can start threads of this kind (virtual threads need JDK 21+). */
  public boolean available() {
    return this == PLATFORM || (Runtime.version().feature() >= 21 && OF_VIRTUAL != null
        && THREAD_PER_TASK != null);
  }

  /**
   * A factory of this kind's threads ({@link #VIRTUAL}: named {@code racer-0}, {@code racer-1},
   * ...); on a JVM where they are not {@linkplain #available() available}, aborts the calling
   * test (JUnit assumption).
   */
  public ThreadFactory factory() {
    if (this == PLATFORM) {
      return Executors.defaultThreadFactory();
    }
    assumeTrue(available(), () -> "virtual threads need JDK 21 or newer; this is "
        + Runtime.version());
    try {
      Class<?> builder = Class.forName("java.lang.Thread$Builder");
      Object named = builder.getMethod("name", String.class, long.class)
          .invoke(OF_VIRTUAL.invoke(null), "racer-", 0L);
      return (ThreadFactory) builder.getMethod("factory").invoke(named);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot make virtual threads on " + Runtime.version(), e);
    }
  }

  /**
   * A pool for {@code threads} racers of this kind: {@link #PLATFORM}, a fixed pool of that many
   * threads; {@link #VIRTUAL}, a new virtual thread per task. Shut it down after the race.
   */
  public ExecutorService pool(int threads) {
    if (this == PLATFORM) {
      return Executors.newFixedThreadPool(threads);
    }
    ThreadFactory factory = factory();
    try {
      return (ExecutorService) THREAD_PER_TASK.invoke(null, factory);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot make virtual threads on " + Runtime.version(), e);
    }
  }

  private static Method method(Class<?> owner, String name, Class<?>... parameters) {
    try {
      return owner.getMethod(name, parameters);
    } catch (NoSuchMethodException e) {
      return null; // before JDK 21 (19 and 20: a preview, not used)
    }
  }
}
