package dev.once.nearcache.internal;

import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Caffeine's clock for the cache of completed records: the latest {@code now} the callers have
 * passed, in nanoseconds since the epoch (never wall time, which the SPI leaves to the callers).
 * Caffeine then drops an entry once some caller's time has reached its record's expiry, and a read
 * costs a volatile load instead of {@code System.nanoTime()}. Answers never depend on it: each
 * compares its own request's {@code now} with the record's expiry.
 *
 * <p>It moves forward only, in steps of at least a millisecond, so that callers do not all write
 * one shared word on every request; Caffeine may keep an entry up to that long after its expiry.
 * Instants are clamped to [epoch, epoch + 2^62 ns ≈ year 2116]: beyond that Caffeine no longer
 * expires entries by time (the size bound and the answers' own check still hold).
 */
final class CallerTime implements Ticker {

  private static final long STEP_NANOS = 1_000_000;
  static final long MAX_NANOS = (1L << 62) - 1;

  private final AtomicLong nanos = new AtomicLong();

  @Override
  public long read() {
    return nanos.get();
  }

  /** A caller's time was seen. */
  void saw(Instant now) {
    long n = nanosOf(now);
    if (n - nanos.get() > STEP_NANOS) {
      nanos.accumulateAndGet(n, Math::max);
    }
  }

  /** {@code instant} in this clock's nanoseconds, clamped. */
  static long nanosOf(Instant instant) {
    long seconds = instant.getEpochSecond();
    if (seconds < 0) {
      return 0;
    }
    if (seconds >= MAX_NANOS / 1_000_000_000L) {
      return MAX_NANOS;
    }
    return seconds * 1_000_000_000L + instant.getNano();
  }
}
