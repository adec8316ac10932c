package dev.once.spi;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import java.time.Instant;
import java.util.Objects;

/**
 * The stored state of one key. Immutable.
 *
 * @param key         the key
 * @param status      where the record is in the state machine
 * @param fingerprint the fingerprint of the request that claimed the key
 * @param token       the fencing token: {@link ClaimRules#firstToken} at the first claim, +1 at
 *                    every takeover or retry
 * @param leaseUntil  until when the IN_PROGRESS claim is honoured
 * @param attempts    how many times the logic was started for this key
 * @param checkpoint  the last checkpoint, or null
 * @param outcome     the outcome of a COMPLETED record, or null
 * @param lastError   what the last retryable failure said, or null
 * @param createdAt   when the key was first claimed
 * @param updatedAt   when the record last changed
 * @param expiresAt   from this instant on the record is expired and the key behaves as new
 * @param claimId     the {@link ClaimRequest#claimId} of the claim that made this record
 *                    IN_PROGRESS last, so a re-sent claim is recognised; 0 when unknown (a record
 *                    written before claim ids existed)
 */
public record IdempotencyRecord(
    IdempotencyKey key,
    Status status,
    Fingerprint fingerprint,
    long token,
    Instant leaseUntil,
    int attempts,
    Checkpoint checkpoint,
    Outcome outcome,
    String lastError,
    Instant createdAt,
    Instant updatedAt,
    Instant expiresAt,
    long claimId) {

  /** A record without a known claim id (0). */
  public IdempotencyRecord(IdempotencyKey key, Status status, Fingerprint fingerprint, long token,
      Instant leaseUntil, int attempts, Checkpoint checkpoint, Outcome outcome, String lastError,
      Instant createdAt, Instant updatedAt, Instant expiresAt) {
    this(key, status, fingerprint, token, leaseUntil, attempts, checkpoint, outcome, lastError,
        createdAt, updatedAt, expiresAt, 0);
  }

  public IdempotencyRecord {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(leaseUntil, "leaseUntil");
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(updatedAt, "updatedAt");
    Objects.requireNonNull(expiresAt, "expiresAt");
    if (status == Status.COMPLETED && outcome == null) {
      throw new IllegalArgumentException("a COMPLETED record needs an outcome");
    }
  }

  /**
   * Whether a fenced write under {@code token} already made this record what the write would:
   * COMPLETED under that token with an equal outcome. Such a write re-sent (after a reconnect, by
   * an SDK retry) is acknowledged, not refused as a lost lease.
   */
  public boolean isCompletedAs(long token, Outcome outcome) {
    return status == Status.COMPLETED && this.token == token && this.outcome.equals(outcome);
  }

  /** As {@link #isCompletedAs}, for {@code fail}: FAILED under {@code token} with that error. */
  public boolean isFailedAs(long token, String error) {
    return status == Status.FAILED && this.token == token && Objects.equals(lastError, error);
  }

  /** Whether the retention has passed at {@code now}: the boundary instant itself is expired. */
  public boolean isExpired(Instant now) {
    return !now.isBefore(expiresAt);
  }

  /** Whether an IN_PROGRESS claim is still honoured at {@code now}: the boundary instant is not. */
  public boolean isLeaseLive(Instant now) {
    return status == Status.IN_PROGRESS && now.isBefore(leaseUntil);
  }
}
