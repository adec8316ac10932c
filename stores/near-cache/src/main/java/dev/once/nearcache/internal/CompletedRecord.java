package dev.once.nearcache.internal;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.Outcome;
import java.time.Instant;
import java.util.Objects;

/**
 * What the cache keeps of one COMPLETED record: enough to answer a claim as the store would
 * (fingerprint, outcome, token) and when that answer stops being true ({@code expiresAt}). The
 * checkpoint, error and timestamps of the stored record are not needed for an answer and not kept.
 *
 * @param fingerprint the record's fingerprint
 * @param replay      the answer to a claim with that fingerprint, built once and shared
 * @param expiresAt   the record's expiry, or an instant before it (never after)
 */
public record CompletedRecord(Fingerprint fingerprint, Claim.Replay replay, Instant expiresAt) {

  /** Roughly what an entry costs besides its outcome body and key text, in bytes (measured). */
  static final int OVERHEAD_BYTES = 340;

  public CompletedRecord {
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(replay, "replay");
    Objects.requireNonNull(expiresAt, "expiresAt");
  }

  /** The record COMPLETED under {@code token} with {@code outcome}, expiring at {@code expiresAt}. */
  public static CompletedRecord of(Fingerprint fingerprint, Outcome outcome, long token,
      Instant expiresAt) {
    return new CompletedRecord(fingerprint, new Claim.Replay(outcome, token), expiresAt);
  }

  /** Whether a claim at {@code now} would still find this record unexpired. */
  boolean isLiveAt(Instant now) {
    return now.isBefore(expiresAt);
  }

  /** Roughly what this entry holds in memory under {@code key}, in bytes. */
  int weight(IdempotencyKey key) {
    long bytes = (long) OVERHEAD_BYTES + replay.outcome().size() + key.scope().length()
        + key.tenant().length() + key.key().length();
    return (int) Math.min(Integer.MAX_VALUE, bytes);
  }

}
