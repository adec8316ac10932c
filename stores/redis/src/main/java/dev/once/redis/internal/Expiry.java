package dev.once.redis.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/**
 * Redis's own expiry of a record. The store decides expiry with the caller's clock; Redis's expiry
 * only collects garbage, a margin late, so that a caller whose clock runs behind never finds a live
 * record gone.
 */
public final class Expiry {

  /** How much longer than its logical expiry Redis keeps a record (a relative {@code PX}). */
  public static final Duration MARGIN = Duration.ofMinutes(1);

  /** {@link #MARGIN} in milliseconds, as the scripts that set the expiry themselves take it. */
  static final byte[] MARGIN_ARGUMENT =
      Long.toString(MARGIN.toMillis()).getBytes(StandardCharsets.US_ASCII);

  private Expiry() {}

  /**
   * Redis's own expiry of a record, relative: the margin past its logical expiry; 0 when that is
   * already past (the key keeps its expiry).
   */
  static long ttlMillis(Instant expiresAt, Instant now) {
    long millis = Math.floorDiv(RecordFormat.micros(expiresAt) - RecordFormat.micros(now) + 999, 1000)
        + MARGIN.toMillis();
    return Math.max(0, millis);
  }
}
