package dev.once.spi;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * Instants as epoch microseconds, FLOORED (never rounded up), the coarsest precision a store may
 * keep time in ({@link IdempotencyStore}). Because every stored instant is then a whole
 * microsecond {@code S}, {@code now < S} exactly when {@code floor(now) < S}: flooring never
 * changes a lease or retention decision. For store implementations; the SQL, Redis and DynamoDB
 * stores all keep time this way.
 */
public final class EpochMicros {

  private static final long PER_SECOND = 1_000_000L;
  private static final Duration ONE = Duration.ofNanos(1_000);

  private EpochMicros() {}

  /**
   * {@code instant} in epoch microseconds, floored.
   *
   * @throws IllegalArgumentException if it does not fit a long (±292,000 years)
   */
  public static long of(Instant instant) {
    try {
      return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), PER_SECOND),
          instant.getNano() / 1_000);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("instant " + instant + " is outside what epoch "
          + "microseconds can hold (±292,000 years)", e);
    }
  }

  /**
   * {@code now + duration} in epoch microseconds, floored.
   *
   * @throws IllegalArgumentException if it is out of range
   */
  public static long plus(Instant now, Duration duration) {
    try {
      return of(now.plus(duration));
    } catch (java.time.DateTimeException | ArithmeticException e) {
      throw new IllegalArgumentException("instant out of range: " + now + " + " + duration, e);
    }
  }

  /** The instant of {@code micros} epoch microseconds. */
  public static Instant toInstant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, PER_SECOND),
        Math.floorMod(micros, PER_SECOND) * 1_000);
  }

  /** {@code instant} floored to a whole microsecond. */
  public static Instant floor(Instant instant) {
    // Already whole (every lease and retention, most clocks' instants): no new object.
    return instant.getNano() % 1_000 == 0 ? instant : instant.truncatedTo(ChronoUnit.MICROS);
  }

  /** A positive duration floored to whole microseconds, and at least one microsecond. */
  public static Duration floor(Duration duration) {
    Duration floored = duration.getNano() % 1_000 == 0 ? duration
        : duration.truncatedTo(ChronoUnit.MICROS);
    return floored.compareTo(ONE) < 0 ? ONE : floored;
  }
}
