package dev.once.cli.demo;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A store whose clients can crash. When the logic throws, {@code Once} releases the claim with
 * {@link #fail} so that a retry may run at once; a process that really dies never sends that
 * write, and its claim stays IN_PROGRESS until the lease passes. This decorator drops that one
 * release for an attempt marked {@link #crash crashed}, which models exactly that death. Every
 * other call, including later writes under the same token (a zombie waking up), goes through.
 */
final class CrashSimulatingStore implements IdempotencyStore {

  private final IdempotencyStore delegate;
  private final Set<Attempt> crashed = ConcurrentHashMap.newKeySet();

  CrashSimulatingStore(IdempotencyStore delegate) {
    this.delegate = delegate;
  }

  /** The attempt holding {@code key} under {@code token} dies now: its release never arrives. */
  void crash(IdempotencyKey key, long token) {
    crashed.add(new Attempt(key, token));
  }

  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    if (crashed.remove(new Attempt(key, token))) {
      return;
    }
    delegate.fail(key, token, error, now, retention);
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    if (crashed.remove(new Attempt(key, token))) {
      return;
    }
    delegate.release(key, token, reason, now, retention);
  }

  @Override
  public Claim claim(ClaimRequest request) {
    return delegate.claim(request);
  }

  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return delegate.claimAll(requests);
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    delegate.complete(key, token, outcome, now, retention);
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return delegate.extend(key, token, now, lease);
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    delegate.checkpoint(key, token, checkpoint, now);
  }

  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return delegate.find(key);
  }

  @Override
  public int purgeExpired(Instant now, int limit) {
    return delegate.purgeExpired(now, limit);
  }

  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return delegate.reapExpiredLeases(now, limit);
  }

  @Override
  public int maxPayloadBytes() {
    return delegate.maxPayloadBytes();
  }

  @Override
  public void close() {
    delegate.close();
  }

  private record Attempt(IdempotencyKey key, long token) {}
}
