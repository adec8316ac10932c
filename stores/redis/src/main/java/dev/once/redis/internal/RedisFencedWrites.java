package dev.once.redis.internal;

import static dev.once.redis.internal.RedisCalls.number;
import static dev.once.redis.internal.RedisCalls.run;
import static dev.once.redis.internal.RedisCalls.utf8;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.spi.Completion;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import dev.once.spi.Outcome;
import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Every write under a claim's fencing token: complete, fail, release, extend and checkpoint, each
 * one Lua script ({@link Script}) that changes the record only while that token holds it, and
 * answers 0 when another claim does ({@link LeaseLostException}). A write that took effect waits
 * for replicas when the durability asks for it.
 */
final class RedisFencedWrites {

  /** The FAIL script's flag: the attempt counts (a failure) or not (a release of unrun work). */
  private static final byte[] COUNTED = {'1'};
  private static final byte[] UNCOUNTED = {'0'};

  private final RedisCalls calls;
  private final KeyLayout layout;
  private final int maxPayloadBytes;

  RedisFencedWrites(RedisCalls calls, KeyLayout layout, int maxPayloadBytes) {
    this.calls = calls;
    this.layout = layout;
    this.maxPayloadBytes = maxPayloadBytes;
  }

  /**
   * The COMPLETE script. The same completion repeated after it was applied (re-sent by Lettuce
   * after a reconnect, or retried by the caller) finds the record COMPLETED under the token with the
   * same outcome and is acknowledged by the script's failure branch, changing nothing.
   */
  void complete(IdempotencyKey key, long token, Outcome outcome, Instant now, Duration retention) {
    checkCompletion(key, outcome, now, retention);
    Operation what = new Operation("complete", key);
    RedisAccess redis = calls.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, completeAsync(redis, keys, token, outcome, now,
        retention));
  }

  /**
   * {@link #complete} without blocking: the same script, its reply and the replica wait awaited on
   * Lettuce's thread within the command timeout; the executor given only when the store has no
   * connection yet.
   */
  CompletableFuture<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention, java.util.concurrent.Executor blocking) {
    try {
      checkCompletion(key, outcome, now, retention);
    } catch (PayloadTooLargeException e) {
      return CompletableFuture.failedFuture(e);
    }
    RedisAccess redis = calls.opened();
    if (redis == null) {
      return CompletableFuture.runAsync(() -> complete(key, token, outcome, now, retention),
          blocking);
    }
    Operation what = new Operation("complete", key);
    byte[][] keys = {layout.record(key)};
    return calls.within(completeAsync(redis, keys, token, outcome, now, retention), what)
        .thenCompose(reply -> reply != 1L
            ? CompletableFuture.failedFuture(new LeaseLostException(key, token))
            : calls.awaitReplicasAsync(redis, List.of(keys[0]), what));
  }

  /** A completion's arguments: none null, the outcome within the store's payload bound. */
  private void checkCompletion(IdempotencyKey key, Outcome outcome, Instant now,
      Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    if (outcome.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("outcome of " + key, outcome.size(), maxPayloadBytes);
    }
  }

  /**
   * Pipelined completions: every COMPLETE script is sent before any answer is awaited (one round
   * trip; in a cluster, one per master, in parallel), then one replica wait for the stored ones.
   * Each script is atomic on its own key; the batch as a whole is not.
   */
  Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now, Duration retention) {
    Completion.checkBatch(completions, maxPayloadBytes);
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    if (completions.isEmpty()) {
      return Set.of();
    }
    RedisAccess redis = calls.access("batch completion of " + completions.size() + " keys");
    List<byte[][]> keys = new ArrayList<>(completions.size());
    List<CompletableFuture<Long>> replies = new ArrayList<>(completions.size());
    for (Completion c : completions) {
      byte[][] k = {layout.record(c.key())};
      keys.add(k);
      replies.add(completeAsync(redis, k, c.token(), c.outcome(), now, retention));
    }
    long deadline = calls.deadline();
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    List<byte[]> stored = new ArrayList<>(completions.size());
    for (int i = 0; i < completions.size(); i++) {
      IdempotencyKey key = completions.get(i).key();
      long reply;
      try {
        reply = calls.await(replies.get(i), deadline, new Operation("batch completion", key));
      } catch (StoreUnavailableException e) {
        // The other completions of the batch may be stored.
        throw completions.size() > 1 ? RedisCalls.mayHaveBeenApplied(e) : e;
      }
      if (reply == 1L) {
        stored.add(keys.get(i)[0]);
      } else {
        lost.add(key);
      }
    }
    if (!stored.isEmpty()) {
      calls.awaitReplicas(redis, stored, "batch completion of " + stored.size() + " keys");
    }
    return lost;
  }

  /**
   * The COMPLETE script with the record's new tail and Redis's expiry computed here, so that the
   * script only checks status and token and joins two strings (see {@link RecordFormat}).
   */
  private CompletableFuture<Long> completeAsync(RedisAccess redis, byte[][] keys, long token,
      Outcome outcome, Instant now, Duration retention) {
    Instant expiresAt = now.plus(retention);
    return run(redis, Script.COMPLETE, ScriptOutputType.INTEGER, keys, number(token),
        RecordFormat.tail(now, expiresAt, outcome),
        number(Math.max(1, Expiry.ttlMillis(expiresAt, now))));
  }

  /**
   * The FAIL script; as for {@link #complete}, the same failure repeated after it was applied is
   * acknowledged.
   */
  void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    fail("fail", key, token, error, now, retention, COUNTED);
  }

  /** The FAIL script, one attempt fewer: the work of the claim released never ran. */
  void release(IdempotencyKey key, long token, String reason, Instant now, Duration retention) {
    fail("release", key, token, reason, now, retention, UNCOUNTED);
  }

  private void fail(String operation, IdempotencyKey key, long token, String error, Instant now,
      Duration retention, byte[] counted) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    Operation what = new Operation(operation, key);
    RedisAccess redis = calls.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what,
        failAsync(redis, key, token, error, now, retention, counted));
  }

  /**
   * The release's FAIL script, sent and not awaited: how a failed batch claim gives back what it
   * acquired ({@link RedisClaims}), pipelined.
   */
  CompletableFuture<Long> releaseAsync(RedisAccess redis, IdempotencyKey key, long token,
      String reason, Instant now, Duration retention) {
    return failAsync(redis, key, token, reason, now, retention, UNCOUNTED);
  }

  private CompletableFuture<Long> failAsync(RedisAccess redis, IdempotencyKey key, long token,
      String error, Instant now, Duration retention, byte[] counted) {
    return run(redis, Script.FAIL, ScriptOutputType.INTEGER, new byte[][] {layout.record(key)},
        number(token), number(RecordFormat.micros(now)),
        number(RecordFormat.micros(now.plus(retention))), utf8(error), counted,
        Expiry.MARGIN_ARGUMENT);
  }

  Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    long leaseUntil = RecordFormat.micros(now.plus(lease));
    Operation what = new Operation("extend", key);
    RedisAccess redis = calls.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, extendAsync(redis, keys, token, now, leaseUntil));
    return EpochMicros.toInstant(leaseUntil);
  }

  /**
   * The EXTEND script for each claim, pipelined: one round trip for a batch heartbeat. A claim
   * whose script answers 0 is no longer held.
   */
  Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    Objects.requireNonNull(claims, "claims");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    if (claims.isEmpty()) {
      return Set.of();
    }
    long leaseUntil = RecordFormat.micros(now.plus(lease));
    RedisAccess redis = calls.access("batch extension of " + claims.size() + " keys");
    List<byte[]> keys = new ArrayList<>(claims.size());
    List<CompletableFuture<Long>> replies = new ArrayList<>(claims.size());
    for (HeldClaim claim : claims) {
      byte[][] k = {layout.record(claim.key())};
      keys.add(k[0]);
      replies.add(extendAsync(redis, k, claim.token(), now, leaseUntil));
    }
    long deadline = calls.deadline();
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    List<byte[]> extended = new ArrayList<>(claims.size());
    for (int i = 0; i < claims.size(); i++) {
      IdempotencyKey key = claims.get(i).key();
      if (calls.await(replies.get(i), deadline, new Operation("batch extension", key)) == 1L) {
        extended.add(keys.get(i));
      } else {
        lost.add(key);
      }
    }
    if (!extended.isEmpty()) {
      calls.awaitReplicas(redis, extended, "batch extension of " + extended.size() + " keys");
    }
    return lost;
  }

  private static CompletableFuture<Long> extendAsync(RedisAccess redis, byte[][] keys, long token,
      Instant now, long leaseUntil) {
    return run(redis, Script.EXTEND, ScriptOutputType.INTEGER, keys, number(token),
        number(RecordFormat.micros(now)), number(leaseUntil), Expiry.MARGIN_ARGUMENT);
  }

  void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(checkpoint, "checkpoint");
    Objects.requireNonNull(now, "now");
    if (checkpoint.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("checkpoint " + checkpoint.name() + " of " + key,
          checkpoint.size(), maxPayloadBytes);
    }
    Operation what = new Operation("checkpoint", key);
    RedisAccess redis = calls.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, run(redis, Script.CHECKPOINT, ScriptOutputType.INTEGER,
        keys, number(token), number(RecordFormat.micros(now)), utf8(checkpoint.name()),
        checkpoint.data(), Expiry.MARGIN_ARGUMENT));
  }

  /** One fenced write's reply: 0 means another claim holds the record now. */
  private void write(RedisAccess redis, IdempotencyKey key, long token, byte[][] keys,
      Object what, CompletableFuture<Long> reply) {
    if (calls.await(reply, calls.deadline(), what) != 1L) {
      throw new LeaseLostException(key, token);
    }
    calls.awaitReplicas(redis, List.of(keys[0]), what);
  }
}
