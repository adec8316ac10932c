package dev.once.spi;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.StoreUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

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
 *       {@link StoreUnavailableException}; nothing is half-written, but a write may have been
 *       applied although its answer was lost ({@link StoreUnavailableException#mayHaveBeenApplied}).
 *   <li>A store recognises its own earlier write, so that a command re-sent after a reconnect or
 *       by an SDK retry is not a conflict: a claim re-sent with the same
 *       {@link ClaimRequest#claimId} that finds its own live claim answers Acquired with its
 *       token ({@link ClaimRules#isOwnLiveClaim}); a completion or failure repeated under the same
 *       token with the same content after it was applied is acknowledged
 *       ({@link IdempotencyRecord#isCompletedAs}, {@link IdempotencyRecord#isFailedAs}); extend and
 *       checkpoint repeated under a live token simply apply again.
 * </ul>
 */
public interface IdempotencyStore extends AutoCloseable {

  /**
   * Claims a key atomically; see {@link ClaimRules#decide} for the decision. The record made
   * IN_PROGRESS keeps the request's {@link ClaimRequest#claimId}.
   */
  Claim claim(ClaimRequest request);

  /**
   * {@link #claim}, without blocking the caller: the same decision, answered by the stage (or the
   * stage completes exceptionally with what {@code claim} would throw). {@code Once.callAsync}
   * claims through it. The default runs {@link #claim} on {@code blocking}, the executor the
   * caller gives for store calls that block; a store whose client is asynchronous overrides it
   * and never blocks (DynamoDB, built with an asynchronous client). The conformance suite checks
   * that it decides as {@code claim} does.
   *
   * @param blocking where to run a claim that blocks; a store that does not block ignores it, or
   *     hands it only what must wait (it may do so from its client's thread: the executor runs
   *     each task on a thread of its own)
   */
  default CompletionStage<Claim> claimAsync(ClaimRequest request, Executor blocking) {
    Objects.requireNonNull(request, "request");
    return CompletableFuture.supplyAsync(() -> claim(request), blocking);
  }

  /**
   * The answer {@link #claim} would give {@code request} now, if this store holds it in memory and
   * can give it without a round trip and without writing anything (a near cache's replay or
   * mismatch of a completed record); otherwise null, and the caller claims. Once's
   * coalesced claims ask it before they queue, so that an answer from memory never waits behind
   * other callers' store calls. The default is null: a store that always asks its server need
   * not override it.
   */
  default Claim claimFromMemory(ClaimRequest request) {
    return null;
  }

  /**
   * Claims a batch, answering in the request order. Stores that can do it in one round trip
   * override this; the default claims one by one. Two requests for the same key in one batch are
   * decided in order: the second sees the first's claim.
   *
   * <p>All or nothing for the caller: when this throws, the caller holds none of the batch's
   * claims, wherever in the batch the failure happened (first, middle or last request; in a
   * pipelined store, also the requests whose answers came after the failed one). A store either acquires nothing (the JDBC store decides the batch in one transaction,
   * rolled back on failure) or, before throwing, releases every claim it acquired in this batch
   * with {@link #release} (FAILED, retryable: the next claim of the key retries it at once, with the
   * next token, the attempt not counted: {@link #release}), as the default and the Redis and
   * DynamoDB stores do. The release is best effort:
   * one that itself fails (the store went away) leaves that record IN_PROGRESS until its lease
   * runs out, when the next claim takes it over. Either way the caller may simply claim the whole
   * batch again.
   */
  default List<Claim> claimAll(List<ClaimRequest> requests) {
    List<Claim> claims = new ArrayList<>(requests.size());
    try {
      for (ClaimRequest request : requests) {
        claims.add(claim(request));
      }
    } catch (RuntimeException failure) {
      for (int i = 0; i < claims.size(); i++) {
        if (claims.get(i) instanceof Claim.Acquired acquired) {
          ClaimRequest r = requests.get(i);
          try {
            release(r.key(), acquired.token(), "released: the batch claim failed: " + failure,
                r.now(), r.retention());
          } catch (RuntimeException e) {
            failure.addSuppressed(e);
          }
        }
      }
      throw failure;
    }
    return claims;
  }

  /**
   * As {@link #claimAll(List)}, for a caller that would rather make the requests one by one than
   * have all of them wait for one key: a store that waits for a row another transaction holds (a
   * database's row lock) may give up once it has waited {@code lockWait} for one, throwing
   * {@link StoreUnavailableException} with nothing of the batch held (all or nothing, as
   * {@link #claimAll(List)}), at once and not retried. Once's coalesced claims call it, and on
   * that failure make each request alone, each on its caller's thread: only the key whose row is
   * held waits. Stores that do not wait for each other's rows need not override it; the default
   * is {@link #claimAll(List)}, which waits.
   *
   * @param lockWait how long to wait for any one row another transaction holds; positive
   */
  default List<Claim> claimAll(List<ClaimRequest> requests, Duration lockWait) {
    return claimAll(requests);
  }

  /**
   * Stores the final outcome: IN_PROGRESS → COMPLETED, kept until {@code now + retention}. The
   * same completion repeated after it was applied (COMPLETED under {@code token} with an equal
   * outcome) is acknowledged and changes nothing.
   *
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token} (and not
   *     already completed by this very write)
   */
  void complete(IdempotencyKey key, long token, Outcome outcome, Instant now, Duration retention);

  /**
   * {@link #complete}, without blocking the caller: the same write, answered by the stage (or the
   * stage completes exceptionally with what {@code complete} would throw, such as
   * {@link LeaseLostException} or {@link StoreUnavailableException}).
   * {@code Once.callAsync} stores a successful outcome through it. The default runs
   * {@link #complete} on {@code blocking}; a store whose client is asynchronous overrides it and
   * never blocks (Redis; DynamoDB, built with an asynchronous client). The conformance suite checks
   * that it writes as {@code complete} does.
   *
   * @param blocking where to run a completion that blocks; a store that does not block ignores it
   */
  default CompletionStage<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention, Executor blocking) {
    Objects.requireNonNull(key, "key");
    return CompletableFuture.runAsync(() -> complete(key, token, outcome, now, retention),
        blocking);
  }

  /**
   * Stores several final outcomes, as {@link #complete} does for each, in as few round trips as the
   * store allows (JDBC on PostgreSQL: one statement; Redis: one pipelined round trip per master).
   *
   * <p>Each completion is its own fenced write: one whose record is no longer IN_PROGRESS under
   * its token (taken over, reaped, purged, never claimed) changes nothing and is reported in the
   * answer, and the others are stored all the same. Nothing is thrown for a lost lease.
   *
   * <p>Before writing anything the batch is checked ({@link Completion#checkBatch}): a null
   * element, two completions for one key (a key is completed once), or an outcome larger than
   * {@link #maxPayloadBytes()} refuses the whole call and stores nothing.
   *
   * <p>When the call throws {@link StoreUnavailableException}, any subset of the batch may have
   * been stored (a store that writes the batch in one transaction stores none of it): the caller
   * treats every completion of the call as not known to be stored, exactly as after a
   * {@code complete} that threw.
   *
   * <p>The default checks the batch, then calls {@link #complete} for each completion in order,
   * catching {@link LeaseLostException} per completion.
   *
   * @param completions the outcomes to store, at most one per key; may be empty
   * @param now         the caller's clock reading
   * @param retention   how long the completed records are kept, counted from {@code now}
   * @return the keys whose completion was refused because the lease was lost, in request order;
   *     empty when every outcome was stored
   * @throws IllegalArgumentException  if two completions are for the same key (nothing stored)
   * @throws dev.once.PayloadTooLargeException if an outcome exceeds {@link #maxPayloadBytes()}
   *     (nothing stored)
   */
  default Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    Completion.checkBatch(completions, maxPayloadBytes());
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    for (Completion c : completions) {
      try {
        complete(c.key(), c.token(), c.outcome(), now, retention);
      } catch (LeaseLostException e) {
        lost.add(c.key());
      }
    }
    return lost;
  }

  /**
   * As {@link #completeAll(List, Instant, Duration)}, for a caller that would rather make the
   * completions one by one than have all of them wait for one key: a store that waits for a row
   * another transaction holds (a database's row lock; a {@code TransactionalOnce} duplicate of a
   * key in progress holds it until its transaction ends) may give up once it has waited
   * {@code lockWait} for one (a store whose statements are sent together may wait that long for
   * each held row), throwing {@link StoreUnavailableException} with nothing of the batch stored,
   * not retried. Once's coalesced completions call it, and on that
   * failure make each completion alone, each on its caller's thread: only the key whose row is
   * held waits. Stores that do not wait for each other's rows need not override it; the default
   * is {@link #completeAll(List, Instant, Duration)}, which waits.
   *
   * @param lockWait how long to wait for any one row another transaction holds; positive
   */
  default Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention, Duration lockWait) {
    return completeAll(completions, now, retention);
  }

  /**
   * Records a retryable failure: IN_PROGRESS → FAILED, kept (never deleted, so the token keeps
   * growing) until {@code now + retention}. The same failure repeated after it was applied
   * (FAILED under {@code token} with an equal error) is acknowledged and changes nothing.
   *
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token} (and not
   *     already failed by this very write)
   */
  void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention);

  /**
   * Gives back a claim whose work never ran (a message released unrun behind another of its
   * ordering group, a consumer stopping, a lease that could not be extended before the work, a
   * batch claim that failed part-way): as {@link #fail}, IN_PROGRESS → FAILED so the next claim
   * retakes the key at once, but the attempt is not counted: the record's attempts go back by one
   * ({@link ClaimRules#released}), so the next claim gets the attempt number this one had and
   * {@code attempts} keeps counting the runs of the work. The same release re-sent after it was
   * applied is acknowledged and changes nothing.
   *
   * <p>The default calls {@link #fail}, which counts the attempt: a store written before this
   * method existed stays correct, only its attempt numbers count claims rather than runs. Every
   * store of this project overrides it, and the conformance suite checks that it does not count.
   *
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token} (and not
   *     already released by this very write)
   */
  default void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    fail(key, token, reason, now, retention);
  }

  /**
   * Extends the lease to {@code now + lease} (also pushing the expiry to at least that instant).
   *
   * @return the new lease end
   * @throws LeaseLostException if the record is not IN_PROGRESS under {@code token}
   */
  Instant extend(IdempotencyKey key, long token, Instant now, Duration lease);

  /**
   * Extends the leases of several claims to {@code now + lease}, as {@link #extend} does each,
   * for a heartbeat that keeps a whole batch alive: stores that can do it in one round trip
   * override this (one {@code UPDATE … FROM unnest} on PostgreSQL, one batch elsewhere in SQL, a
   * pipeline on Redis); the default extends one by one. Each lease not reported lost now ends at
   * {@code now + lease} (at the store's precision, never later).
   *
   * @return the keys whose record is no longer IN_PROGRESS under the claim's token (another worker
   *     took over, or the claim was completed or released meanwhile), in request order
   * @throws StoreUnavailableException if the store failed; some leases may have been extended
   */
  default Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    Objects.requireNonNull(claims, "claims");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    for (HeldClaim claim : claims) {
      try {
        extend(claim.key(), claim.token(), now, lease);
      } catch (LeaseLostException e) {
        lost.add(claim.key());
      }
    }
    return lost;
  }

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

  /**
   * How many store calls of each kind concurrent callers make alone before they share batch
   * calls, when the user leaves it to the store: what {@code Once.Builder.coalesceStoreCalls}
   * takes when it is not called. 0, the default: never (coalescing off). A store suggests a
   * positive number only where batches pay (one statement and one commit for many keys) and where
   * it bounds a batch's wait for a row another transaction holds ({@link #claimAll(List,
   * Duration)} and {@link #completeAll(List, Instant, Duration, Duration)} give up after their
   * {@code lockWait}), so that a held key holds up no caller but its own.
   *
   * <p>It answers at once, without asking its server: {@code Once} asks when it is built and,
   * while the store does not know, on its calls' threads, an event loop's included. A store that
   * learns what it runs on from its first call (the JDBC store detects its database) answers -1
   * until then; {@code Once} makes its calls alone and asks again on each call until the answer
   * is 0 or more, and keeps that answer. A store whose answer throws, or is below -1, is taken
   * as suggesting 0 (logged once).
   *
   * @return 0 (off), a positive number of calls alone (e.g. the connection pool's size), or -1
   *     while the store does not know yet
   */
  default int defaultCoalescing() {
    return 0;
  }

  /** The largest outcome or checkpoint body this store can hold. */
  default int maxPayloadBytes() {
    return Integer.MAX_VALUE;
  }

  /** Releases connections or threads the store owns; a store over a caller's pool leaves it open. */
  @Override
  default void close() {}
}
