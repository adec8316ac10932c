package dev.once.jdbc.internal;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * The store's time representation: BIGINT microseconds since the epoch, in every dialect.
 *
 * <p>Why not {@code timestamptz}/{@code DATETIME(6)}: drivers differ in how they bind sub-micro
 * instants (pgjdbc rounds nanoseconds half-up to micros, which moves a boundary instant one
 * microsecond later and breaks exact lease/retention boundaries), MariaDB's DATETIME has no zone,
 * and SQLite has no time type at all. An integer is exact, compares with an index like any number,
 * and reads back as the same instant in every dialect.
 *
 * <p>Instants are FLOORED to whole microseconds before they are decided on or stored. Because every
 * stored instant is a whole microsecond {@code S}, {@code now < S} exactly when
 * {@code floor(now) < S}: flooring never changes a lease or retention decision.
 */
public final class Micros {

  private static final long PER_SECOND = 1_000_000L;
  private static final Duration ONE = Duration.ofNanos(1_000);

  private Micros() {}

  /** The instant as epoch microseconds, floored. */
  public static long of(Instant instant) {
    try {
      return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), PER_SECOND),
          instant.getNano() / 1_000);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "instant " + instant + " is outside what the JDBC store can hold (±292,000 years)", e);
    }
  }

  /** The instant of epoch microseconds. */
  public static Instant toInstant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, PER_SECOND),
        Math.floorMod(micros, PER_SECOND) * 1_000);
  }

  /** The instant floored to a whole microsecond. */
  public static Instant floor(Instant instant) {
    return instant.truncatedTo(ChronoUnit.MICROS);
  }

  /** A positive duration floored to whole microseconds, and at least one microsecond. */
  public static Duration floor(Duration duration) {
    Duration floored = duration.truncatedTo(ChronoUnit.MICROS);
    return floored.compareTo(ONE) < 0 ? ONE : floored;
  }
}
