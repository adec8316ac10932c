package dev.once.dynamodb.internal;

import java.time.Duration;
import java.time.Instant;

/**
 * Instants as epoch microseconds, floored (never rounded up) as the store SPI asks, so that
 * {@code now < leaseUntil} decides the same on stored numbers as on exact instants.
 */
public final class Micros {

  private static final long PER_SECOND = 1_000_000L;

  private Micros() {}

  /** {@code instant} in epoch microseconds, floored. */
  public static long of(Instant instant) {
    try {
      return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), PER_SECOND),
          instant.getNano() / 1_000);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("instant out of range: " + instant, e);
    }
  }

  /** {@code now + duration} in epoch microseconds, floored. */
  public static long plus(Instant now, Duration duration) {
    try {
      return of(now.plus(duration));
    } catch (java.time.DateTimeException e) {
      throw new IllegalArgumentException("instant out of range: " + now + " + " + duration, e);
    }
  }

  /** The instant of {@code micros}. */
  public static Instant instant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, PER_SECOND),
        Math.floorMod(micros, PER_SECOND) * 1_000);
  }

  /** {@code instant} floored to the microsecond. */
  public static Instant floor(Instant instant) {
    return instant(of(instant));
  }

  /**
   * Epoch seconds for the TTL attribute, rounded up: DynamoDB may delete an item once its TTL is
   * past, so the TTL must never be earlier than the logical expiry.
   */
  public static long ttlSeconds(long micros) {
    return Math.floorDiv(micros, PER_SECOND) + (Math.floorMod(micros, PER_SECOND) == 0 ? 0 : 1);
  }
}
