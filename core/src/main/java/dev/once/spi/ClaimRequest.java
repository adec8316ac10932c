package dev.once.spi;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.internal.Checks;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * One claim: who wants to run the logic for {@code key}, when, for how long.
 *
 * @param key         the key to claim
 * @param fingerprint the fingerprint of this request
 * @param now         the caller's clock reading; stores decide with it, never with their own clock
 * @param lease       how long the claim is honoured before another worker may take over
 * @param retention   how long the record is kept, counted from now while in progress and from
 *                    completion once finished
 */
public record ClaimRequest(
    IdempotencyKey key, Fingerprint fingerprint, Instant now, Duration lease, Duration retention) {

  public ClaimRequest {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    Objects.requireNonNull(retention, "retention");
    Checks.positive(lease, "lease");
    Checks.positive(retention, "retention");
  }

  /** When a claim made by this request stops being honoured. */
  public Instant leaseUntil() {
    return now.plus(lease);
  }

  /**
   * When an IN_PROGRESS record made by this request expires: after the retention, and never before
   * its lease ends, so that purging never deletes a live claim.
   */
  public Instant expiresAt() {
    Instant byRetention = now.plus(retention);
    Instant leaseUntil = leaseUntil();
    return byRetention.isAfter(leaseUntil) ? byRetention : leaseUntil;
  }
}
