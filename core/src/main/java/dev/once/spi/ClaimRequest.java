package dev.once.spi;

import dev.once.support.Checks;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
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
 * @param claimId     this claim's identity, random and never 0: stored in the record, so that the
 *                    same request re-sent (a client library retrying after a reconnect, an SDK
 *                    retry) is recognised as the claimant's own and answered Acquired with the
 *                    token it was given, not InProgress. A re-send carries the original
 *                    {@code now}, so it must come within the lease of the original (a client
 *                    library's command timeout is far shorter): much later, against a key
 *                    purged meanwhile, its old time would seed an old first token
 */
public record ClaimRequest(
    IdempotencyKey key, Fingerprint fingerprint, Instant now, Duration lease, Duration retention,
    long claimId) {

  public ClaimRequest {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(fingerprint, "fingerprint");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    Objects.requireNonNull(retention, "retention");
    Checks.positive(lease, "lease");
    Checks.positive(retention, "retention");
    if (claimId == 0) {
      throw new IllegalArgumentException("claimId 0 means no claim id; use a random one");
    }
  }

  /** A claim with a new random {@link #claimId}. */
  public ClaimRequest(IdempotencyKey key, Fingerprint fingerprint, Instant now, Duration lease,
      Duration retention) {
    this(key, fingerprint, now, lease, retention, newClaimId());
  }

  /** A random claim id, never 0. */
  public static long newClaimId() {
    long id;
    do {
      id = java.util.concurrent.ThreadLocalRandom.current().nextLong();
    } while (id == 0);
    return id;
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
