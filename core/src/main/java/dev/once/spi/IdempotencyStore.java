package dev.once.spi;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.StoreUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Where records live. Every store implements the same rules, checked by the conformance suite in
 * {@code once-testkit}:
 *
 * <ul>
 *   <li>{@link #claim} is one atomic step that decides as {@link ClaimRules#decide} does. Never
 *       check-then-insert.
 *   <li>Every write after the claim is conditional on the fencing token and on the record being
 *       IN_PROGRESS; a stale token throws {@link LeaseLostException} and changes nothing.
 *   <li>Time comes from the caller's {@code now}, never the store's clock. A store that keeps
 *       time coarser than nanoseconds floors every instant (never rounds up), so that
 *       {@code now < leaseUntil} and {@code now < expiresAt} decide the same as with exact
 *       instants; the microsecond is the coarsest precision allowed.
 *   <li>Transient trouble (connection loss, lock timeout, serialization failure) throws
 *       {@link StoreUnavailableException}; nothing is half-written.
 * </ul>
 */
public interface IdempotencyStore extends AutoCloseable {

  /** Claims a key atomically; see {@link ClaimRules#decide} for the decision. */
  Claim claim(ClaimRequest request);

  /**
   * Claims a batch, answering in the request order. Stores that can do it in one round trip
   * override this; the default claims one by one. Two requests for the same key in one batch are
   * decided in order: the second sees the first's claim.
   */
  default List<Claim> claimAll(List<ClaimRequest> requests) {
    List<Claim> claims = new ArrayList<>(requests.size());
    for (ClaimRequest request : requests) {
      claims.add(claim(request));
    }
    return claims;
  }

  /**
   * Stores the final outcome: IN_PROGRESS → COMPLETED, kept until {@code now + retention}.
   *
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token}
   */
  void complete(IdempotencyKey key, long token, Outcome outcome, Instant now, Duration retention);

  /**
   * Records a retryable failure: IN_PROGRESS → FAILED, kept (never deleted, so the token keeps
   * growing) until {@code now + retention}.
   *
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token}
   */
  void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention);

  /**
   * Extends the lease to {@code now + lease} (also pushing the expiry to at least that instant).
   *
   * @return the new lease end
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token}
   */
  Instant extend(IdempotencyKey key, long token, Instant now, Duration lease);

  /**
   * Replaces the record's checkpoint.
   *
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token}
   */
  void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now);

  /** The stored record, expired or not, if there is one. */
  Optional<IdempotencyRecord> find(IdempotencyKey key);

  /**
   * Deletes up to {@code limit} records whose expiry is at or before {@code now}.
   *
   * @return how many were deleted; fewer than {@code limit} means none are left, except for rows
   *     a store skipped because a claim held them at that moment (a later pass gets them)
   */
  int purgeExpired(Instant now, int limit);

  /**
   * Turns up to {@code limit} IN_PROGRESS records whose lease ended at or before {@code now} into
   * FAILED ("lease expired"), keeping their token. A worker still running under such a lease is
   * fenced from then on. Claims take over expired leases anyway; reaping makes them visible.
   *
   * @return how many were reaped
   */
  int reapExpiredLeases(Instant now, int limit);

  /** The largest outcome or checkpoint body this store can hold. */
  default int maxPayloadBytes() {
    return Integer.MAX_VALUE;
  }

  /** Releases connections or threads the store owns; a store over a caller's pool leaves it open. */
  @Override
  default void close() {}
}
