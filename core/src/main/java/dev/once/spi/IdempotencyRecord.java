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
    Instant expiresAt) {

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

  /** Whether the retention has passed at {@code now}: the boundary instant itself is expired. */
  public boolean isExpired(Instant now) {
    return !now.isBefore(expiresAt);
  }

  /** Whether an IN_PROGRESS claim is still honoured at {@code now}: the boundary instant is not. */
  public boolean isLeaseLive(Instant now) {
    return status == Status.IN_PROGRESS && now.isBefore(leaseUntil);
  }
}
