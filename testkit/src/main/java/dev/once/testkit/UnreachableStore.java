package dev.once.testkit;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A store seen through a view that can be cut off: for stores with no outage of their own (the
 * in-memory store) in tests of what integrations do while the store is unreachable.
 */
public final class UnreachableStore implements IdempotencyStore {
  private final IdempotencyStore store;
  private volatile boolean down;

  /** {@code store}, reachable until {@link #down} is set. */
  public UnreachableStore(IdempotencyStore store) {
    this.store = store;
  }

  /**
   * Makes every call fail with {@link StoreUnavailableException} (true), as a remote store's do
   * while its server is unreachable, or pass again (false).
   */
  public void down(boolean down) {
    this.down = down;
  }

  private <T> T call(Supplier<T> call) {
    if (down) {
      throw new StoreUnavailableException("the store is unreachable (test outage)", null);
    }
    return call.get();
  }

  private void run(Runnable call) {
    call(() -> {
      call.run();
      return null;
    });
  }

  @Override
  public Claim claim(ClaimRequest request) {
    return call(() -> store.claim(request));
  }

  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return call(() -> store.claimAll(requests));
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    run(() -> store.complete(key, token, outcome, now, retention));
  }

  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    return call(() -> store.completeAll(completions, now, retention));
  }

  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now,
      Duration retention) {
    run(() -> store.fail(key, token, error, now, retention));
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    run(() -> store.release(key, token, reason, now, retention));
  }

  @Override
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    return call(() -> store.extendAll(claims, now, lease));
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return call(() -> store.extend(key, token, now, lease));
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    run(() -> store.checkpoint(key, token, checkpoint, now));
  }

  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return call(() -> store.find(key));
  }

  @Override
  public int purgeExpired(Instant now, int limit) {
    return call(() -> store.purgeExpired(now, limit));
  }

  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return call(() -> store.reapExpiredLeases(now, limit));
  }

  @Override
  public int maxPayloadBytes() {
    return store.maxPayloadBytes();
  }
}
