package dev.once.cli;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.cli.support.Latencies;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code once bench --virtual-threads N}: {@code Once.call} on new keys by N concurrent callers
 * on virtual threads, by N platform threads, and by a bounded pool of {@code --threads} platform
 * threads (the usual way), side by side over one store and one connection pool, in rounds that
 * alternate the order. Reports operations per second, p50 and p99 latency, and the CPU time of
 * this JVM per operation (the store server's own CPU is not counted).
 *
 * <p>The library and this command are built for Java 17, so virtual threads are reached
 * reflectively; the option needs a JDK 21+ at run time.
 */
final class VirtualThreadsBench {

  private static final byte[] PAYLOAD =
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}"
          .getBytes(java.nio.charset.StandardCharsets.UTF_8);
  private static final String RESPONSE = "{\"id\":\"ch_1\"}";

  /** One side: its name, how many callers, on which threads. */
  record Side(String name, int callers, ThreadFactory threads) {}

  /** One side's results, summed over the rounds. */
  record Result(Side side, long operations, long errors, long nanos, long cpuNanos,
      Latencies.Summary latency) {
    double opsPerSecond() {
      return nanos == 0 ? 0 : operations * 1e9 / nanos;
    }

    double cpuMicrosPerOp() {
      return operations == 0 ? 0 : cpuNanos / 1e3 / operations;
    }
  }

  private final Once once;
  private final Duration measure;
  private final Duration warm;
  private final Duration work;
  private final String run;
  private final AtomicLong keys = new AtomicLong();

  VirtualThreadsBench(Once once, Duration measure, Duration warm, Duration work, String run) {
    this.once = once;
    this.measure = measure;
    this.warm = warm;
    this.work = work;
    this.run = run;
  }

  /** A factory of virtual threads, or null before JDK 21. */
  static ThreadFactory virtualThreads() {
    if (Runtime.version().feature() < 21) {
      return null;
    }
    try {
      Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
      Class<?> type = Class.forName("java.lang.Thread$Builder");
      Method name = type.getMethod("name", String.class, long.class);
      return (ThreadFactory) type.getMethod("factory").invoke(name.invoke(builder,
          "once-bench-virtual-", 0L));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  /** Platform threads, daemons, numbered. */
  static ThreadFactory platformThreads(String prefix) {
    AtomicLong n = new AtomicLong();
    return r -> {
      Thread t = new Thread(r, prefix + n.getAndIncrement());
      t.setDaemon(true);
      return t;
    };
  }

  List<Result> compare(List<Side> sides, int rounds, Runnable roundDone)
      throws InterruptedException {
    int n = sides.size();
    long[] ops = new long[n];
    long[] nanos = new long[n];
    long[] cpu = new long[n];
    long[] errors = new long[n];
    Latencies[] latencies = new Latencies[n];
    for (int i = 0; i < n; i++) {
      latencies[i] = new Latencies();
    }
    for (int round = 0; round < rounds; round++) {
      for (int k = 0; k < n; k++) {
        int i = round % 2 == 0 ? k : n - 1 - k;
        long[] r = measure(sides.get(i), latencies[i]);
        ops[i] += r[0];
        nanos[i] += r[1];
        cpu[i] += r[2];
        errors[i] += r[3];
        roundDone.run();
      }
    }
    List<Result> results = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      results.add(new Result(sides.get(i), ops[i], errors[i], nanos[i], cpu[i], latencies[i].summary()));
    }
    return results;
  }

  /**
   * The side's callers on new keys: warm-up, then measured; {ops, nanos, cpu nanos, errors}. A
   * call that fails (a store timeout under the load: a caller that waited too long for a pooled
   * connection) is counted as an error, not as an operation, and the caller goes on.
   */
  private long[] measure(Side side, Latencies latencies) throws InterruptedException {
    CountDownLatch ready = new CountDownLatch(side.callers());
    CountDownLatch go = new CountDownLatch(1);
    long[] window = new long[2];
    AtomicLong operations = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    AtomicReference<RuntimeException> firstError = new AtomicReference<>();
    List<Thread> callers = new ArrayList<>(side.callers());
    for (int t = 0; t < side.callers(); t++) {
      String prefix = side.name() + "-" + run + "-" + t + "-";
      Thread caller = side.threads().newThread(() -> {
        ready.countDown();
        long count = 0;
        try {
          go.await();
          while (true) {
            long before = System.nanoTime();
            if (before - window[1] >= 0) {
              break;
            }
            boolean ok = true;
            try {
              once.call(IdempotencyKey.of("bench", prefix + keys.getAndIncrement()),
                  Fingerprint.of(PAYLOAD), Codecs.utf8(), attempt -> {
                    if (!work.isZero()) {
                      Thread.sleep(work.toMillis(), work.toNanosPart() % 1_000_000);
                    }
                    return RESPONSE;
                  });
            } catch (RuntimeException e) {
              ok = false;
              firstError.compareAndSet(null, e);
            }
            long after = System.nanoTime();
            if (!ok) {
              if (before - window[0] >= 0 && after - window[1] < 0) {
                errors.incrementAndGet();
              }
            } else if (before - window[0] >= 0 && after - window[1] < 0) {
              latencies.record(after - before);
              count++;
            }
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        operations.addAndGet(count);
      });
      callers.add(caller);
      caller.start();
    }
    ready.await(); // every caller started before the clock runs
    window[0] = System.nanoTime() + warm.toNanos();
    window[1] = window[0] + measure.toNanos();
    go.countDown(); // publishes the window
    long sleep = (window[0] - System.nanoTime()) / 1_000_000;
    if (sleep > 0) {
      Thread.sleep(sleep);
    }
    long cpuBefore = processCpuNanos();
    sleep = (window[1] - System.nanoTime()) / 1_000_000;
    if (sleep > 0) {
      Thread.sleep(sleep);
    }
    long cpuAfter = processCpuNanos();
    for (Thread caller : callers) {
      caller.join();
    }
    if (operations.get() == 0 && firstError.get() != null) {
      throw firstError.get(); // nothing worked: the store is not usable
    }
    return new long[] {operations.get(), measure.toNanos(), Math.max(0, cpuAfter - cpuBefore),
        errors.get()};
  }

  /** This JVM's CPU time, all threads; -1 where the JVM does not say. */
  private static long processCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return -1;
  }

  static void print(PrintWriter out, List<Result> results) {
    String format = "%-26s %8s %10s %8s %9s %9s %10s %9s%n";
    out.printf(Locale.ROOT, format, "side", "callers", "ops/s", "errors", "p50 ms", "p99 ms",
        "CPU µs/op", "vs first");
    out.printf(Locale.ROOT, format, "-".repeat(26), "-".repeat(8), "-".repeat(10),
        "-".repeat(8), "-".repeat(9), "-".repeat(9), "-".repeat(10), "-".repeat(9));
    Result first = results.get(0);
    for (Result r : results) {
      out.printf(Locale.ROOT, format, r.side().name(), r.side().callers(),
          String.format(Locale.ROOT, "%.0f", r.opsPerSecond()), r.errors(),
          String.format(Locale.ROOT, "%.3f", r.latency().percentile(50) / 1e6),
          String.format(Locale.ROOT, "%.3f", r.latency().percentile(99) / 1e6),
          String.format(Locale.ROOT, "%.1f", r.cpuMicrosPerOp()),
          r == first ? "" : String.format(Locale.ROOT, "%.2fx",
              first.opsPerSecond() == 0 ? 0 : r.opsPerSecond() / first.opsPerSecond()));
    }
    out.printf(Locale.ROOT, "%nEvery side: Once.call on new keys (claim + run + complete) over "
        + "the same store and connection pool. CPU µs/op: this JVM's CPU time (every thread) "
        + "over the measured window per operation; the store server's CPU is not counted. "
        + "Errors: calls that failed in the window (a store timeout: a caller that waited too "
        + "long for a pooled connection), not counted as operations.%n");
    out.flush();
  }
}
