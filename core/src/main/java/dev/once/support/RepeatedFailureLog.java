package dev.once.support;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Logs a failure that repeats — a store outage answering every call of every request the same
 * way — once with its stack trace, then one line per interval with how many more came, instead of
 * a stack trace of 80 lines per call. Failures are the same when they have the same kind and
 * message. Thread-safe; one per place that logs (the servlet filter, {@code @Idempotent}, a
 * consumer). Time comes from the ticker it is given, so tests need no sleep.
 */
public final class RepeatedFailureLog {

  /** Default interval between the summaries of a repeating failure. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(1);

  /** How many different failures are tracked at once; a flood of distinct ones resets it. */
  private static final int MAX_TRACKED = 256;

  private final System.Logger logger;
  private final long intervalNanos;
  private final LongSupplier ticker;
  private final Map<String, Window> windows = new ConcurrentHashMap<>();

  /** One failure's state: when its window began, when it was last seen, how many since. */
  private static final class Window {
    boolean seen;
    long startedNanos;
    long lastSeenNanos;
    long suppressed;
  }

  private RepeatedFailureLog(System.Logger logger, Duration interval, LongSupplier ticker) {
    this.logger = Objects.requireNonNull(logger, "logger");
    this.intervalNanos = Checks.positive(interval, "interval").toNanos();
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /** A log on {@code logger}, summarising each repeating failure every {@link #DEFAULT_INTERVAL}. */
  public static RepeatedFailureLog of(System.Logger logger) {
    return new RepeatedFailureLog(logger, DEFAULT_INTERVAL, System::nanoTime);
  }

  /** A log with its own interval and ticker (nanoseconds, as {@link System#nanoTime()}). */
  public static RepeatedFailureLog of(System.Logger logger, Duration interval,
      LongSupplier ticker) {
    return new RepeatedFailureLog(logger, interval, ticker);
  }

  /**
   * Logs {@code what} at {@code level}: with {@code failure}'s stack trace the first time this
   * failure is seen, and again when it comes back after an interval without it; in between, for
   * the same failure, one line per interval saying how many more came, the calls between counted,
   * not logged.
   */
  public void log(System.Logger.Level level, String what, Throwable failure) {
    String signature = failure.getClass().getName() + ": " + failure.getMessage();
    long now = ticker.getAsLong();
    if (windows.size() >= MAX_TRACKED && !windows.containsKey(signature)) {
      windows.clear();
    }
    Window window = windows.computeIfAbsent(signature, k -> new Window());
    boolean withTrace = false;
    long summary = 0;
    synchronized (window) {
      if (!window.seen || now - window.lastSeenNanos >= intervalNanos) {
        withTrace = true; // new, or back after a quiet interval
        window.startedNanos = now;
        window.suppressed = 0;
      } else if (now - window.startedNanos >= intervalNanos) {
        summary = window.suppressed + 1;
        window.startedNanos = now;
        window.suppressed = 0;
      } else {
        window.suppressed++;
      }
      window.seen = true;
      window.lastSeenNanos = now;
    }
    if (withTrace) {
      logger.log(level, what, failure);
    } else if (summary > 0) {
      logger.log(level, what + " (the same failure " + summary + " times in the last "
          + Duration.ofNanos(intervalNanos).toSeconds() + " s): " + signature);
    }
  }
}
