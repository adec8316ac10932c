package dev.once.redis.internal;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.redis.Durability;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import io.lettuce.core.KeyValue;
import io.lettuce.core.Range;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The store's operations: each transition is one Lua script (one round trip, atomic on the
 * record's slot), called by {@code EVALSHA}; every wait is bounded by the command timeout.
 */
public final class RedisEngine implements AutoCloseable {

  /**
   * How much longer than its logical expiry Redis keeps a record (relative {@code PEXPIRE}). The
   * store decides expiry with the caller's clock; Redis's own expiry only collects garbage, late
   * enough that a caller whose clock runs behind never finds a live record gone.
   */
  public static final Duration EXPIRY_MARGIN = Duration.ofMinutes(1);

  private static final byte[] MARGIN =
      Long.toString(EXPIRY_MARGIN.toMillis()).getBytes(StandardCharsets.US_ASCII);
  private static final byte[][] FIELDS = ascii("status", "fingerprint", "token", "lease_until",
      "attempts", "checkpoint_name", "checkpoint_data", "outcome_kind", "outcome_type",
      "outcome_body", "last_error", "created_at", "updated_at", "expires_at");
  /** How many rounds a purge or reap makes at most before answering what it has done. */
  private static final int MAX_ROUNDS = 16;

  private final RedisAccess redis;
  private final KeyLayout layout;
  private final Durability durability;
  private final Duration timeout;
  private final int maxPayloadBytes;

  public RedisEngine(RedisAccess redis, KeyLayout layout, Durability durability, Duration timeout,
      int maxPayloadBytes) {
    this.redis = redis;
    this.layout = layout;
    this.durability = durability;
    this.timeout = timeout;
    this.maxPayloadBytes = maxPayloadBytes;
  }

  // ---------------------------------------------------------------------------------------------
  // claims

  public Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    byte[][] keys = layout.keys(request.key());
    Claim claim = decode(request, await(claimAsync(request, keys), deadline(), "claim of "
        + request.key()));
    if (claim instanceof Claim.Acquired) {
      awaitReplicas(List.of(keys[0]), "claim of " + request.key());
    }
    return claim;
  }

  /**
   * Pipelined: every request is sent before any answer is awaited, so a batch of distinct keys
   * costs one round trip (in a cluster, one per master, in parallel). A key requested again in the
   * batch goes in a later wave, after the earlier answers, so it sees the earlier claim.
   */
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    Objects.requireNonNull(requests, "requests");
    int n = requests.size();
    Claim[] claims = new Claim[n];
    int[] wave = new int[n];
    Map<IdempotencyKey, Integer> seen = new HashMap<>();
    int waves = 0;
    for (int i = 0; i < n; i++) {
      ClaimRequest request = Objects.requireNonNull(requests.get(i), "request " + i);
      wave[i] = seen.merge(request.key(), 1, Integer::sum) - 1;
      waves = Math.max(waves, wave[i] + 1);
    }
    List<byte[]> acquired = new ArrayList<>();
    try {
      for (int w = 0; w < waves; w++) {
        List<Integer> indexes = new ArrayList<>();
        List<byte[][]> keys = new ArrayList<>();
        List<CompletableFuture<List<Object>>> replies = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          if (wave[i] == w) {
            byte[][] k = layout.keys(requests.get(i).key());
            indexes.add(i);
            keys.add(k);
            replies.add(claimAsync(requests.get(i), k));
          }
        }
        long deadline = deadline();
        for (int j = 0; j < indexes.size(); j++) {
          ClaimRequest request = requests.get(indexes.get(j));
          Claim claim = decode(request, await(replies.get(j), deadline, "batch claim of "
              + request.key()));
          claims[indexes.get(j)] = claim;
          if (claim instanceof Claim.Acquired) {
            acquired.add(keys.get(j)[0]);
          }
        }
      }
      if (!acquired.isEmpty()) {
        awaitReplicas(acquired, "batch claim of " + acquired.size() + " keys");
      }
    } catch (RuntimeException failure) {
      release(requests, claims, failure);
      throw failure;
    }
    return Arrays.asList(claims);
  }

  /**
   * After a failed batch claim: gives back every claim the batch acquired as FAILED, pipelined and
   * best effort (no replica wait; a release that fails leaves the lease to run out).
   */
  private void release(List<ClaimRequest> requests, Claim[] claims, RuntimeException failure) {
    List<CompletableFuture<Long>> releases = new ArrayList<>();
    for (int i = 0; i < claims.length; i++) {
      if (claims[i] instanceof Claim.Acquired acquired) {
        ClaimRequest r = requests.get(i);
        releases.add(run(Script.FAIL, ScriptOutputType.INTEGER, layout.keys(r.key()),
            number(acquired.token()), number(Micros.of(r.now())),
            number(Micros.of(r.now().plus(r.retention()))),
            utf8("released: the batch claim failed: " + failure), MARGIN));
      }
    }
    long deadline = deadline();
    for (CompletableFuture<Long> release : releases) {
      try {
        await(release, deadline, "release after a failed batch claim");
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
        return; // the server is away: the others would time out the same way
      }
    }
  }

  private CompletableFuture<List<Object>> claimAsync(ClaimRequest request, byte[][] keys) {
    long now = Micros.of(request.now());
    return run(Script.CLAIM, ScriptOutputType.MULTI, keys,
        number(now),
        request.fingerprint().digest(),
        number(Micros.of(request.leaseUntil())),
        number(Micros.of(request.expiresAt())),
        number(ClaimRules.firstToken(request.now())),
        MARGIN);
  }

  private static Claim decode(ClaimRequest request, List<Object> reply) {
    String kind = text(reply.get(0));
    switch (kind) {
      case "A": {
        Checkpoint checkpoint = reply.size() > 5
            ? Checkpoint.of(text(reply.get(5)), bytes(reply.get(6))) : null;
        return new Claim.Acquired(number(reply.get(1)), "1".equals(text(reply.get(4))),
            (int) number(reply.get(2)), checkpoint, Micros.toInstant(number(reply.get(3))));
      }
      case "R":
        return new Claim.Replay(Outcome.of(Outcome.Kind.valueOf(text(reply.get(2))),
            text(reply.get(3)), bytes(reply.get(4))), number(reply.get(1)));
      case "I":
        return new Claim.InProgress(Micros.toInstant(number(reply.get(1))));
      case "M":
        return new Claim.Mismatch();
      default:
        throw new IllegalStateException("unexpected claim reply " + kind + " for " + request.key());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // writes under the fencing token

  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    if (outcome.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("outcome of " + key, outcome.size(), maxPayloadBytes);
    }
    byte[][] keys = layout.keys(key);
    write(key, token, keys, "complete", run(Script.COMPLETE, ScriptOutputType.INTEGER, keys,
        number(token), number(Micros.of(now)), number(Micros.of(now.plus(retention))),
        ascii(outcome.kind().name()), utf8(outcome.mediaType()), outcome.body(), MARGIN));
  }

  /**
   * Pipelined completions: every COMPLETE script is sent before any answer is awaited (one round
   * trip; in a cluster, one per master, in parallel), then one replica wait for the stored ones.
   * Each script is atomic on its own key; the batch as a whole is not.
   */
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    Completion.checkBatch(completions, maxPayloadBytes);
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    if (completions.isEmpty()) {
      return Set.of();
    }
    byte[] at = number(Micros.of(now));
    byte[] expiresAt = number(Micros.of(now.plus(retention)));
    List<byte[][]> keys = new ArrayList<>(completions.size());
    List<CompletableFuture<Long>> replies = new ArrayList<>(completions.size());
    for (Completion c : completions) {
      byte[][] k = layout.keys(c.key());
      Outcome outcome = c.outcome();
      keys.add(k);
      replies.add(run(Script.COMPLETE, ScriptOutputType.INTEGER, k, number(c.token()), at,
          expiresAt, ascii(outcome.kind().name()), utf8(outcome.mediaType()), outcome.body(),
          MARGIN));
    }
    long deadline = deadline();
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    List<byte[]> stored = new ArrayList<>(completions.size());
    for (int i = 0; i < completions.size(); i++) {
      IdempotencyKey key = completions.get(i).key();
      if (await(replies.get(i), deadline, "batch completion of " + key) == 1L) {
        stored.add(keys.get(i)[0]);
      } else {
        lost.add(key);
      }
    }
    if (!stored.isEmpty()) {
      awaitReplicas(stored, "batch completion of " + stored.size() + " keys");
    }
    return lost;
  }

  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    byte[][] keys = layout.keys(key);
    write(key, token, keys, "fail", run(Script.FAIL, ScriptOutputType.INTEGER, keys,
        number(token), number(Micros.of(now)), number(Micros.of(now.plus(retention))),
        utf8(error), MARGIN));
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    long leaseUntil = Micros.of(now.plus(lease));
    byte[][] keys = layout.keys(key);
    write(key, token, keys, "extend", run(Script.EXTEND, ScriptOutputType.INTEGER, keys,
        number(token), number(Micros.of(now)), number(leaseUntil), MARGIN));
    return Micros.toInstant(leaseUntil);
  }

  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(checkpoint, "checkpoint");
    Objects.requireNonNull(now, "now");
    if (checkpoint.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("checkpoint " + checkpoint.name() + " of " + key,
          checkpoint.size(), maxPayloadBytes);
    }
    byte[][] keys = layout.keys(key);
    write(key, token, keys, "checkpoint", run(Script.CHECKPOINT, ScriptOutputType.INTEGER,
        new byte[][] {keys[0]}, number(token), number(Micros.of(now)), utf8(checkpoint.name()),
        checkpoint.data()));
  }

  private void write(IdempotencyKey key, long token, byte[][] keys, String what,
      CompletableFuture<Long> reply) {
    String description = what + " of " + key;
    if (await(reply, deadline(), description) != 1L) {
      throw new LeaseLostException(key, token);
    }
    awaitReplicas(List.of(keys[0]), description);
  }

  // ---------------------------------------------------------------------------------------------
  // reads and maintenance

  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    Objects.requireNonNull(key, "key");
    List<KeyValue<byte[], byte[]>> values = await(
        redis.commands().hmget(layout.keys(key)[0], FIELDS).toCompletableFuture(), deadline(),
        "find of " + key);
    byte[][] v = new byte[FIELDS.length][];
    for (int i = 0; i < v.length; i++) {
      KeyValue<byte[], byte[]> kv = values.get(i);
      v[i] = kv.hasValue() ? kv.getValue() : null;
    }
    if (v[0] == null) {
      return Optional.empty();
    }
    Status status = Status.valueOf(text(v[0]));
    Checkpoint checkpoint = v[5] == null ? null
        : Checkpoint.of(text(v[5]), v[6] == null ? new byte[0] : v[6]);
    Outcome outcome = v[7] == null ? null
        : Outcome.of(Outcome.Kind.valueOf(text(v[7])), text(v[8]), v[9] == null ? new byte[0] : v[9]);
    return Optional.of(new IdempotencyRecord(key, status, Fingerprint.fromDigest(v[1]),
        number(v[2]), Micros.toInstant(number(v[3])), (int) number(v[4]), checkpoint,
        status == Status.COMPLETED ? outcome : null, v[10] == null ? null : text(v[10]),
        Micros.toInstant(number(v[11])), Micros.toInstant(number(v[12])),
        Micros.toInstant(number(v[13]))));
  }

  public int purgeExpired(Instant now, int limit) {
    return sweep(Script.PURGE, now, limit, true);
  }

  public int reapExpiredLeases(Instant now, int limit) {
    return sweep(Script.REAP, now, limit, false);
  }

  /**
   * Purge or reap over every bucket: count the due entries of each bucket's index (pipelined), then
   * run the bucket script on the buckets that have some, with limits that add up to at most
   * {@code limit}. Index entries of records Redis already expired are dropped on the way and do
   * not count, so a round may do less than it counted; another round follows.
   */
  private int sweep(Script script, Instant now, int limit, boolean purge) {
    Objects.requireNonNull(now, "now");
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive, was " + limit);
    }
    String what = purge ? "purge of expired records" : "reap of expired leases";
    long nowMicros = Micros.of(now);
    byte[] nowText = number(nowMicros);
    Range<Long> due = Range.from(Range.Boundary.unbounded(), Range.Boundary.including(nowMicros));
    int done = 0;
    for (int round = 0; round < MAX_ROUNDS && done < limit; round++) {
      List<CompletableFuture<Long>> counts = new ArrayList<>(KeyLayout.BUCKETS);
      for (int b = 0; b < KeyLayout.BUCKETS; b++) {
        byte[] index = purge ? layout.expiryIndex(b) : layout.leaseIndex(b);
        counts.add(redis.commands().zcount(index, due).toCompletableFuture());
      }
      long deadline = deadline();
      List<Integer> buckets = new ArrayList<>();
      List<CompletableFuture<Long>> results = new ArrayList<>();
      int planned = 0;
      for (int b = 0; b < KeyLayout.BUCKETS; b++) {
        long count = await(counts.get(b), deadline, what);
        if (count > 0 && planned < limit - done) {
          int share = (int) Math.min(count, limit - done - planned);
          planned += share;
          byte[][] keys = purge
              ? new byte[][] {layout.expiryIndex(b), layout.leaseIndex(b)}
              : new byte[][] {layout.leaseIndex(b)};
          buckets.add(b);
          results.add(run(script, ScriptOutputType.INTEGER, keys, nowText, number(share)));
        }
      }
      if (buckets.isEmpty()) {
        break;
      }
      deadline = deadline();
      int roundDone = 0;
      for (CompletableFuture<Long> result : results) {
        roundDone += (int) (long) await(result, deadline, what);
      }
      done += roundDone;
      if (roundDone == planned) {
        // Everything counted was real: unless the limit stopped us, nothing due is left.
        if (done < limit) {
          break;
        }
      }
    }
    return done;
  }

  // ---------------------------------------------------------------------------------------------
  // plumbing

  /** EVALSHA, falling back to EVAL (which caches the script) when the server answers NOSCRIPT. */
  private <T> CompletableFuture<T> run(Script script, ScriptOutputType type, byte[][] keys,
      byte[]... args) {
    try {
      CompletableFuture<T> sha = redis.commands().<T>evalsha(script.sha(), type, keys, args)
          .toCompletableFuture();
      return sha.exceptionallyCompose(e -> unwrap(e) instanceof RedisNoScriptException
          ? redis.commands().<T>eval(script.source(), type, keys, args).toCompletableFuture()
          : CompletableFuture.failedFuture(unwrap(e)));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private void awaitReplicas(List<byte[]> keys, String what) {
    int replicas = durability.replicas();
    if (replicas == 0) {
      return;
    }
    long deadline = System.nanoTime() + timeout.toNanos() + durability.timeout().toNanos();
    long acknowledged = await(redis.waitForReplicas(keys, replicas, durability.timeout())
        .toCompletableFuture(), deadline, "WAIT after " + what);
    if (acknowledged < replicas) {
      throw new StoreUnavailableException("only " + acknowledged + " of " + replicas
          + " replicas acknowledged the " + what + " within " + durability.timeout().toMillis()
          + " ms (" + redis.description() + "); the write is on the primary and may survive,"
          + " retry as for any store error", null);
    }
  }

  private long deadline() {
    return System.nanoTime() + timeout.toNanos();
  }

  private <T> T await(CompletionStage<T> stage, long deadline, String what) {
    CompletableFuture<T> future = stage.toCompletableFuture();
    try {
      return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw timedOut(what, e);
    } catch (ExecutionException | CompletionException e) {
      throw unavailable(what, unwrap(e));
    } catch (CancellationException e) {
      throw unavailable(what, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException("interrupted while waiting for Redis ("
          + redis.description() + ") to answer the " + what, e);
    }
  }

  private StoreUnavailableException timedOut(String what, Throwable cause) {
    return new StoreUnavailableException("Redis (" + redis.description() + ") did not answer the "
        + what + " within the command timeout of " + timeout.toMillis() + " ms", cause);
  }

  private StoreUnavailableException unavailable(String what, Throwable cause) {
    if (cause instanceof RedisCommandTimeoutException) {
      return timedOut(what, cause);
    }
    if (cause instanceof RedisConnectionException) {
      return new StoreUnavailableException("cannot reach Redis (" + redis.description()
          + ") for the " + what + ": " + cause.getMessage(), cause);
    }
    return new StoreUnavailableException("Redis (" + redis.description() + ") failed the " + what
        + ": " + cause, cause);
  }

  private static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private static byte[] number(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }

  private static long number(Object reply) {
    if (reply instanceof Long l) {
      return l;
    }
    return Long.parseLong(text(reply));
  }

  private static String text(Object reply) {
    return new String(bytes(reply), StandardCharsets.UTF_8);
  }

  private static byte[] bytes(Object reply) {
    if (reply == null) {
      return new byte[0];
    }
    return (byte[]) reply;
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[][] ascii(String... s) {
    byte[][] out = new byte[s.length][];
    for (int i = 0; i < s.length; i++) {
      out[i] = ascii(s[i]);
    }
    return out;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Where this engine connects to, for messages. */
  public String description() {
    return redis.description();
  }

  @Override
  public void close() {
    redis.close();
  }
}
