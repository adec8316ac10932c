package dev.once.spi;

import java.time.Instant;
import java.util.Objects;

/**
 * The claim decision as a pure function, for stores that can read the current record and write
 * its successor atomically (under a lock, in a compare-and-set loop or in a transaction). Stores
 * that decide elsewhere (a Lua script, a conditional write) must decide the same way.
 *
 * <ol>
 *   <li>No record, or an expired one: create IN_PROGRESS. The token continues from the expired
 *       record's (+1); with no record at all it starts at {@link #firstToken}, the claim time in
 *       epoch milliseconds, so that a key purged and claimed again never hands out a token that a
 *       worker of the purged record may still hold.
 *   <li>Another fingerprint, in any status: {@link Claim.Mismatch}.
 *   <li>COMPLETED: {@link Claim.Replay}.
 *   <li>IN_PROGRESS with a live lease: {@link Claim.InProgress}.
 *   <li>IN_PROGRESS with a passed lease (takeover) or FAILED (retry): IN_PROGRESS again with token
 *       + 1, attempts + 1, the checkpoint kept.
 * </ol>
 *
 * <p>Before all but the first: IN_PROGRESS with a live lease, made by a claim with the request's
 * own {@link ClaimRequest#claimId} — the same claim re-sent, its first answer lost — answers
 * {@link Claim.Acquired} with the record's token and lease, unchanged (a store recognises its own
 * earlier write). Every record a claim writes carries the claim's id.
 */
public final class ClaimRules {

  private ClaimRules() {}

  /** A decision: the claim to answer and the record to store, or null to leave it unchanged. */
  public record Decision(Claim claim, IdempotencyRecord next) {
    public Decision {
      Objects.requireNonNull(claim, "claim");
    }
  }

  /** Decides a claim against the current record ({@code null} when there is none). */
  public static Decision decide(IdempotencyRecord current, ClaimRequest request) {
    if (current == null || current.isExpired(request.now())) {
      long token = current == null ? firstToken(request.now()) : current.token() + 1;
      IdempotencyRecord next = new IdempotencyRecord(
          request.key(), Status.IN_PROGRESS, request.fingerprint(), token, request.leaseUntil(), 1,
          null, null, null, request.now(), request.now(), request.expiresAt(), request.claimId());
      return new Decision(
          new Claim.Acquired(token, false, 1, null, next.leaseUntil()), next);
    }
    if (!current.fingerprint().equals(request.fingerprint())) {
      return new Decision(new Claim.Mismatch(), null);
    }
    if (isOwnLiveClaim(current, request)) {
      return new Decision(resentAnswer(current), null);
    }
    switch (current.status()) {
      case COMPLETED:
        return new Decision(new Claim.Replay(current.outcome(), current.token()), null);
      case IN_PROGRESS:
        if (current.isLeaseLive(request.now())) {
          return new Decision(new Claim.InProgress(current.leaseUntil()), null);
        }
        return retake(current, request, true);
      case FAILED:
        return retake(current, request, false);
      default:
        throw new IllegalStateException("unknown status " + current.status());
    }
  }

  /**
   * Whether {@code current} is IN_PROGRESS under a live lease taken by this very request (its
   * claim id): the request was sent before and its answer lost.
   */
  public static boolean isOwnLiveClaim(IdempotencyRecord current, ClaimRequest request) {
    return isOwnClaim(current, request) && current.isLeaseLive(request.now());
  }

  /**
   * Whether {@code current} is IN_PROGRESS under the claim {@code request} made, live or not: what
   * a store releases after a batch claim whose answer it never got.
   */
  public static boolean isOwnClaim(IdempotencyRecord current, ClaimRequest request) {
    return current.status() == Status.IN_PROGRESS && current.claimId() == request.claimId();
  }

  /**
   * What {@link IdempotencyStore#fail} leaves of {@code current}: FAILED with {@code error}, token,
   * checkpoint and claim id kept, expiring after the retention but never before the lease ends.
   */
  public static IdempotencyRecord failed(IdempotencyRecord current, String error, Instant now,
      java.time.Duration retention) {
    return new IdempotencyRecord(current.key(), Status.FAILED, current.fingerprint(),
        current.token(), current.leaseUntil(), current.attempts(), current.checkpoint(), null,
        error, current.createdAt(), now, later(now.plus(retention), current.leaseUntil()),
        current.claimId());
  }

  /**
   * What {@link IdempotencyStore#release} leaves of {@code current}: as {@link #failed}, with one
   * attempt fewer (never below zero), since the work of the claim released never ran.
   */
  public static IdempotencyRecord released(IdempotencyRecord current, String reason, Instant now,
      java.time.Duration retention) {
    IdempotencyRecord failed = failed(current, reason, now, retention);
    return new IdempotencyRecord(failed.key(), failed.status(), failed.fingerprint(),
        failed.token(), failed.leaseUntil(), Math.max(0, failed.attempts() - 1),
        failed.checkpoint(), null, failed.lastError(), failed.createdAt(), failed.updatedAt(),
        failed.expiresAt(), failed.claimId());
  }

  /**
   * The answer to a re-sent claim that finds its own live claim: Acquired with the record's token,
   * attempt, checkpoint and lease. Whether the first answer was a takeover is not kept: false.
   */
  public static Claim.Acquired resentAnswer(IdempotencyRecord current) {
    return new Claim.Acquired(current.token(), false, current.attempts(), current.checkpoint(),
        current.leaseUntil());
  }

  /**
   * What {@link IdempotencyStore#reapExpiredLeases} leaves of {@code current} at {@code now}: FAILED
   * ("lease expired") with token, checkpoint and expiry kept, when it is IN_PROGRESS and its lease
   * has passed; null when there is nothing to reap.
   */
  public static IdempotencyRecord reaped(IdempotencyRecord current, Instant now) {
    if (current.status() != Status.IN_PROGRESS || current.isLeaseLive(now)) {
      return null;
    }
    return new IdempotencyRecord(current.key(), Status.FAILED, current.fingerprint(),
        current.token(), current.leaseUntil(), current.attempts(), current.checkpoint(), null,
        "lease expired", current.createdAt(), now, current.expiresAt(), current.claimId());
  }

  /**
   * The token of a key's first claim: the claim time in epoch milliseconds (at least 1). Tokens of
   * a record grow by one per claim, so a record purged and created again starts far above any
   * token of its predecessor (which could only get there by more claims than milliseconds of
   * retention). Starting at 1 instead would let a zombie of the purged record write into its
   * successor.
   */
  public static long firstToken(Instant now) {
    return Math.max(1, now.toEpochMilli());
  }

  private static Decision retake(IdempotencyRecord current, ClaimRequest request, boolean takeover) {
    long token = current.token() + 1;
    int attempt = current.attempts() + 1;
    IdempotencyRecord next = new IdempotencyRecord(
        current.key(), Status.IN_PROGRESS, current.fingerprint(), token, request.leaseUntil(),
        attempt, current.checkpoint(), null, current.lastError(), current.createdAt(),
        request.now(), later(current.expiresAt(), request.expiresAt()), request.claimId());
    return new Decision(
        new Claim.Acquired(token, takeover, attempt, current.checkpoint(), next.leaseUntil()), next);
  }

  private static Instant later(Instant a, Instant b) {
    return a.isAfter(b) ? a : b;
  }
}
