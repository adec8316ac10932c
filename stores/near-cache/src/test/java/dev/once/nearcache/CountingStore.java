package dev.once.nearcache;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A real store with every call counted, so a test can tell whether the near cache asked the store
 * at all; and two faults a test can inject into it: a completion whose answer is lost after the
 * store applied it, and a hook that runs before each {@code find} (to hold it at a latch).
 */
final class CountingStore implements IdempotencyStore {

  final IdempotencyStore store;
  final AtomicInteger claims = new AtomicInteger();
  final AtomicInteger claimAlls = new AtomicInteger();
  final AtomicInteger claimAllRequests = new AtomicInteger();
  final AtomicInteger completes = new AtomicInteger();
  final AtomicInteger finds = new AtomicInteger();
  private volatile boolean loseNextCompletionAnswer;
  private volatile Consumer<IdempotencyKey> beforeFind = k -> {};

  CountingStore(IdempotencyStore store) {
    this.store = store;
  }

  /** Every store call that reads or decides a claim. */
  int reads() {
    return claims.get() + claimAlls.get() + finds.get();
  }

  /** The next completion is applied, then its answer is lost (it throws). */
  void loseNextCompletionAnswer() {
    loseNextCompletionAnswer = true;
  }

  void beforeFind(Consumer<IdempotencyKey> hook) {
    beforeFind = hook;
  }

  private volatile Consumer<IdempotencyKey> beforeClaim = k -> {};

  /** Runs {@code hook} before each {@code claim} reaches the store (to hold it at a latch). */
  void beforeClaim(Consumer<IdempotencyKey> hook) {
    beforeClaim = hook;
  }

  @Override
  public Claim claim(ClaimRequest request) {
    claims.incrementAndGet();
    beforeClaim.accept(request.key());
    return store.claim(request);
  }

  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    claimAlls.incrementAndGet();
    claimAllRequests.addAndGet(requests.size());
    return store.claimAll(requests);
  }

  /** The lock wait of the last {@code claimAll} that had one. */
  volatile Duration lastLockWait;

  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests, Duration lockWait) {
    claimAlls.incrementAndGet();
    claimAllRequests.addAndGet(requests.size());
    lastLockWait = lockWait;
    return store.claimAll(requests, lockWait);
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    completes.incrementAndGet();
    store.complete(key, token, outcome, now, retention);
    if (loseNextCompletionAnswer) {
      loseNextCompletionAnswer = false;
      throw new StoreUnavailableException("the answer was lost after the write", null, true);
    }
  }

  /** The lock wait of the last {@code completeAll} that had one. */
  volatile Duration lastCompletionLockWait;

  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention, Duration lockWait) {
    lastCompletionLockWait = lockWait;
    return store.completeAll(completions, now, retention, lockWait);
  }

  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    return store.completeAll(completions, now, retention);
  }

  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    store.fail(key, token, error, now, retention);
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    store.release(key, token, reason, now, retention);
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return store.extend(key, token, now, lease);
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    store.checkpoint(key, token, checkpoint, now);
  }

  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    finds.incrementAndGet();
    beforeFind.accept(key);
    return store.find(key);
  }

  @Override
  public int purgeExpired(Instant now, int limit) {
    return store.purgeExpired(now, limit);
  }

  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return store.reapExpiredLeases(now, limit);
  }

  @Override
  public int maxPayloadBytes() {
    return store.maxPayloadBytes();
  }

  /** What {@link #defaultCoalescing} answers: the store's unless set. */
  volatile Integer suggestedCoalescing;

  @Override
  public int defaultCoalescing() {
    Integer suggested = suggestedCoalescing;
    return suggested != null ? suggested : store.defaultCoalescing();
  }

  @Override
  public void close() {
    store.close();
  }
}
