package dev.once.redis.internal;

import static dev.once.redis.internal.RedisCalls.send;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The store's operations on records in {@link RecordFormat}, assembled from one part per concern:
 * {@link RedisClaims} (the claim protocol), {@link RedisFencedWrites} (every write under the
 * fencing token), {@link RedisSweeps} (purge and reap) and {@link RedisCalls} (sending, waiting
 * within the command timeout, mapping failures). What is left here is the plain read.
 */
public final class RedisEngine implements AutoCloseable {

  private final RedisCalls calls;
  private final KeyLayout layout;
  private final RedisClaims claims;
  private final RedisFencedWrites writes;
  private final RedisSweeps sweeps;

  public RedisEngine(RedisConnector connector, KeyLayout layout, int replicas,
      Duration replicaTimeout, Duration timeout, int maxPayloadBytes) {
    this.calls = new RedisCalls(connector, replicas, replicaTimeout, timeout);
    this.layout = layout;
    this.writes = new RedisFencedWrites(calls, layout, maxPayloadBytes);
    this.claims = new RedisClaims(calls, layout, writes);
    this.sweeps = new RedisSweeps(calls, layout);
  }

  public Claim claim(ClaimRequest request) {
    return claims.claim(request);
  }

  public java.util.concurrent.CompletableFuture<Claim> claimAsync(ClaimRequest request,
      java.util.concurrent.Executor blocking) {
    return claims.claimAsync(request, blocking);
  }

  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return claims.claimAll(requests);
  }

  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    writes.complete(key, token, outcome, now, retention);
  }

  public java.util.concurrent.CompletableFuture<Void> completeAsync(IdempotencyKey key,
      long token, Outcome outcome, Instant now, Duration retention,
      java.util.concurrent.Executor blocking) {
    return writes.completeAsync(key, token, outcome, now, retention, blocking);
  }

  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    return writes.completeAll(completions, now, retention);
  }

  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    writes.fail(key, token, error, now, retention);
  }

  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    writes.release(key, token, reason, now, retention);
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return writes.extend(key, token, now, lease);
  }

  public Set<IdempotencyKey> extendAll(List<HeldClaim> heldClaims, Instant now, Duration lease) {
    return writes.extendAll(heldClaims, now, lease);
  }

  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    writes.checkpoint(key, token, checkpoint, now);
  }

  /** {@code GET}; a failure says nothing was applied (a read changes nothing). */
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    Objects.requireNonNull(key, "key");
    Operation what = new Operation("find", key);
    RedisAccess redis = calls.access(what);
    byte[] value;
    try {
      value = calls.await(send(() -> redis.commands().get(layout.record(key))), calls.deadline(),
          what);
    } catch (StoreUnavailableException e) {
      throw e.mayHaveBeenApplied() ? new StoreUnavailableException(e.getMessage(), e.getCause(),
          false) : e;
    }
    return value == null ? Optional.empty() : Optional.of(RecordFormat.decode(key, value));
  }

  public int purgeExpired(Instant now, int limit) {
    return sweeps.purgeExpired(now, limit);
  }

  public int reapExpiredLeases(Instant now, int limit) {
    return sweeps.reapExpiredLeases(now, limit);
  }

  /** Where this engine connects to, for messages. */
  public String description() {
    return calls.description();
  }

  /** Closes the connection, and the client when the store owns it. */
  @Override
  public void close() {
    calls.close();
  }
}
