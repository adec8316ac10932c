package dev.once.redis.internal;

import java.time.Instant;

/**
 * The store's time representation: epoch microseconds as decimal text. Lua compares them with
 * {@code tonumber}: a double is exact up to 2^53 µs, past the year 2200, so the comparisons are
 * exact integer comparisons. Instants are FLOORED to the microsecond; since every stored instant
 * is a whole microsecond {@code S}, {@code now < S} exactly when {@code floor(now) < S}, so
 * flooring never changes a lease or retention decision.
 */
public final class Micros {

  private static final long PER_SECOND = 1_000_000L;
  /** 2^53: beyond it Lua's doubles stop being exact integers. */
  private static final long LUA_EXACT = 1L << 53;

  private Micros() {}

  /** The instant as epoch microseconds, floored. */
  public static long of(Instant instant) {
    long micros;
    try {
      micros = Math.addExact(Math.multiplyExact(instant.getEpochSecond(), PER_SECOND),
          instant.getNano() / 1_000);
    } catch (ArithmeticException e) {
      micros = Long.MAX_VALUE;
    }
    if (micros < 0 || micros >= LUA_EXACT) {
      throw new IllegalArgumentException("instant " + instant
          + " is outside what the Redis store can hold (1970 to the year 2255)");
    }
    return micros;
  }

  /** The instant of epoch microseconds. */
  public static Instant toInstant(long micros) {
    return Instant.ofEpochSecond(Math.floorDiv(micros, PER_SECOND),
        Math.floorMod(micros, PER_SECOND) * 1_000);
  }
}
