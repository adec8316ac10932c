package dev.once.redis.internal;

import dev.once.Checkpoint;
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
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
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
 * The store's operations on records in {@link RecordFormat}: a claim is {@code SET … NX GET} (plus
 * a compare-and-set script when the record must change), every write under the token one Lua
 * script called by {@code EVALSHA}; every wait is bounded by the command timeout.
 */
public final class RedisEngine implements AutoCloseable {

  /**
   * How much longer than its logical expiry Redis keeps a record (a relative {@code PX}). The
   * store decides expiry with the caller's clock; Redis's own expiry only collects garbage, late
   * enough that a caller whose clock runs behind never finds a live record gone.
   */
  public static final Duration EXPIRY_MARGIN = Duration.ofMinutes(1);

  private static final byte[] MARGIN =
      Long.toString(EXPIRY_MARGIN.toMillis()).getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EMPTY = new byte[0];
  /** How often a claim re-decides after its compare-and-set found the record changed. */
  private static final int MAX_SWAPS = 16;
  /** Keys a {@code SCAN} call of purge and reap asks for. */
  private static final int SCAN_PAGE = 1000;

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

  /**
   * Refuses a server older than Redis 7.0, whose {@code SET} does not take {@code NX} and
   * {@code GET} together: better one clear error at start than a syntax error on every claim. A
   * server that does not answer {@code INFO} (some managed services rename it) is let through.
   */
  public void requireSetNxGet() {
    String info;
    try {
      info = await(redis.commands().info("server").toCompletableFuture(), deadline(),
          "INFO server");
    } catch (StoreUnavailableException unanswered) {
      return;
    }
    String problem = versionProblem(info);
    if (problem != null) {
      throw new IllegalStateException(redis.description() + " " + problem);
    }
  }

  /** Why the server of this {@code INFO server} text is too old, or null when it is not. */
  public static String versionProblem(String info) {
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("redis_version:")) {
        String version = line.substring("redis_version:".length()).trim();
        try {
          int major = Integer.parseInt(version.substring(0, version.indexOf('.')));
          return major >= 7 ? null : "runs Redis " + version + "; once-redis needs Redis 7.0 or"
              + " newer (a claim is SET ... NX GET, which older servers refuse)";
        } catch (RuntimeException unreadable) {
          return null;
        }
      }
    }
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // claims

  /**
   * {@code SET key new-record NX GET PX}: a new key is created and a replay, a duplicate in progress
   * or a mismatch answered in one command, no script. Only when the record must change (a takeover,
   * a retry, an expired record) the decision is made here, by {@link ClaimRules#decide}, and written
   * by the {@link Script#SWAP} compare-and-set: a second round trip, repeated with what the swap
   * found if another writer came first.
   */
  public Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    Claim[] claims = new Claim[1];
    List<byte[]> acquired = new ArrayList<>(1);
    settle(List.of(request), List.of(0), claims, acquired);
    if (!acquired.isEmpty()) {
      awaitReplicas(acquired, "claim of " + request.key());
    }
    return claims[0];
  }

  /**
   * Pipelined: every request is sent before any answer is awaited, so a batch of distinct keys
   * costs one round trip (in a cluster, one per master, in parallel), and the records that must
   * change one more. A key requested again in the batch goes in a later wave, after the earlier
   * answers, so it sees the earlier claim.
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
        for (int i = 0; i < n; i++) {
          if (wave[i] == w) {
            indexes.add(i);
          }
        }
        settle(requests, indexes, claims, acquired);
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

  /** Claims the requests at {@code indexes} (distinct keys), pipelined; answers into {@code claims}. */
  private void settle(List<ClaimRequest> requests, List<Integer> indexes, Claim[] claims,
      List<byte[]> acquired) {
    List<Swap> swaps = new ArrayList<>();
    List<byte[]> keys = new ArrayList<>(indexes.size());
    List<ClaimRules.Decision> creations = new ArrayList<>(indexes.size());
    List<CompletableFuture<byte[]>> firsts = new ArrayList<>(indexes.size());
    for (int i : indexes) {
      ClaimRequest request = requests.get(i);
      ClaimRules.Decision creation = ClaimRules.decide(null, request);
      byte[] key = layout.record(request.key());
      keys.add(key);
      creations.add(creation);
      firsts.add(redis.commands().setGet(key, RecordFormat.encode(creation.next()),
          SetArgs.Builder.nx().px(ttlMillis(request.expiresAt(), request.now())))
          .toCompletableFuture());
    }
    long deadline = deadline();
    for (int j = 0; j < indexes.size(); j++) {
      int i = indexes.get(j);
      byte[] previous = await(firsts.get(j), deadline, "claim of " + requests.get(i).key());
      if (previous == null) {
        // SET NX wrote the new record.
        claims[i] = creations.get(j).claim();
        acquired.add(keys.get(j));
      } else {
        swaps.add(new Swap(i, keys.get(j), previous));
      }
    }
    for (int round = 0; !swaps.isEmpty(); round++) {
      if (round == MAX_SWAPS) {
        throw new StoreUnavailableException("the record of " + requests.get(swaps.get(0).index).key()
            + " changed under " + MAX_SWAPS + " claims in a row (" + redis.description()
            + "); retry as for any store error", null);
      }
      List<Swap> writing = new ArrayList<>();
      for (Swap swap : swaps) {
        ClaimRequest request = requests.get(swap.index);
        IdempotencyRecord current = swap.current == null ? null
            : RecordFormat.decode(request.key(), swap.current);
        ClaimRules.Decision decision = ClaimRules.decide(current, request);
        if (decision.next() == null) {
          claims[swap.index] = decision.claim();
        } else {
          swap.decision = decision;
          swap.reply = swapAsync(swap.key, swap.current, RecordFormat.encode(decision.next()),
              ttlMillis(decision.next().expiresAt(), request.now()));
          writing.add(swap);
        }
      }
      deadline = deadline();
      swaps = new ArrayList<>();
      for (Swap swap : writing) {
        List<Object> reply = await(swap.reply, deadline, "claim of "
            + requests.get(swap.index).key());
        if (number(reply.get(0)) == 1L) {
          claims[swap.index] = swap.decision.claim();
          acquired.add(swap.key);
        } else {
          swaps.add(new Swap(swap.index, swap.key, reply.size() > 1 ? bytes(reply.get(1)) : null));
        }
      }
    }
  }

  /** A record to change by compare-and-set: what was read, what was decided, what Redis said. */
  private static final class Swap {
    final int index;
    final byte[] key;
    final byte[] current;
    ClaimRules.Decision decision;
    CompletableFuture<List<Object>> reply;

    Swap(int index, byte[] key, byte[] current) {
      this.index = index;
      this.key = key;
      this.current = current;
    }
  }

  /** {@link Script#SWAP}: {@code next} (null: delete) if the record is still {@code current}. */
  private CompletableFuture<List<Object>> swapAsync(byte[] key, byte[] current, byte[] next,
      long ttlMillis) {
    return run(Script.SWAP, ScriptOutputType.MULTI, new byte[][] {key},
        current == null ? EMPTY : current, next == null ? EMPTY : next,
        ttlMillis > 0 ? number(ttlMillis) : EMPTY);
  }

  /**
   * Redis's own expiry of a record, relative: the margin past its logical expiry; 0 when that is
   * already past (the key keeps its expiry).
   */
  private static long ttlMillis(Instant expiresAt, Instant now) {
    long millis = Math.floorDiv(Micros.of(expiresAt) - Micros.of(now) + 999, 1000)
        + EXPIRY_MARGIN.toMillis();
    return Math.max(0, millis);
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
        releases.add(run(Script.FAIL, ScriptOutputType.INTEGER,
            new byte[][] {layout.record(r.key())}, number(acquired.token()),
            number(Micros.of(r.now())), number(Micros.of(r.now().plus(r.retention()))),
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
    byte[][] keys = {layout.record(key)};
    write(key, token, keys, "complete", completeAsync(keys, token, outcome, now, retention));
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
    List<byte[][]> keys = new ArrayList<>(completions.size());
    List<CompletableFuture<Long>> replies = new ArrayList<>(completions.size());
    for (Completion c : completions) {
      byte[][] k = {layout.record(c.key())};
      keys.add(k);
      replies.add(completeAsync(k, c.token(), c.outcome(), now, retention));
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

  /**
   * The COMPLETE script with the record's new tail and Redis's expiry computed here, so that the
   * script only checks status and token and joins two strings (see {@link RecordFormat}).
   */
  private CompletableFuture<Long> completeAsync(byte[][] keys, long token, Outcome outcome,
      Instant now, Duration retention) {
    Instant expiresAt = now.plus(retention);
    return run(Script.COMPLETE, ScriptOutputType.INTEGER, keys, number(token),
        RecordFormat.tail(now, expiresAt, outcome), number(Math.max(1, ttlMillis(expiresAt, now))));
  }

  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    byte[][] keys = {layout.record(key)};
    write(key, token, keys, "fail", run(Script.FAIL, ScriptOutputType.INTEGER, keys,
        number(token), number(Micros.of(now)), number(Micros.of(now.plus(retention))),
        utf8(error), MARGIN));
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    long leaseUntil = Micros.of(now.plus(lease));
    byte[][] keys = {layout.record(key)};
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
    byte[][] keys = {layout.record(key)};
    write(key, token, keys, "checkpoint", run(Script.CHECKPOINT, ScriptOutputType.INTEGER,
        keys, number(token), number(Micros.of(now)), utf8(checkpoint.name()), checkpoint.data(),
        MARGIN));
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
    byte[] value = await(redis.commands().get(layout.record(key)).toCompletableFuture(),
        deadline(), "find of " + key);
    return value == null ? Optional.empty() : Optional.of(RecordFormat.decode(key, value));
  }

  public int purgeExpired(Instant now, int limit) {
    return sweep(now, limit, true);
  }

  public int reapExpiredLeases(Instant now, int limit) {
    return sweep(now, limit, false);
  }

  /**
   * Purge or reap: {@code SCAN} the records of this prefix (in a cluster, master by master), read
   * each page's records (pipelined), and delete the expired ones, or turn the IN_PROGRESS ones whose
   * lease passed into FAILED, each by {@link Script#SWAP}, so that a record changed since it was
   * read is left alone. Costs a walk over the keyspace: Redis's own key expiry is what collects
   * records in production; these are for a caller's clock ahead of Redis's, and for dashboards.
   */
  private int sweep(Instant now, int limit, boolean purge) {
    Objects.requireNonNull(now, "now");
    if (limit <= 0) {
      throw new IllegalArgumentException("limit must be positive, was " + limit);
    }
    String what = purge ? "purge of expired records" : "reap of expired leases";
    ScanArgs args = ScanArgs.Builder.matches(layout.pattern()).limit(SCAN_PAGE);
    int done = 0;
    KeyScanCursor<byte[]> page = null;
    while (done < limit && (page == null || !page.isFinished())) {
      page = await(page == null ? redis.commands().scan(args).toCompletableFuture()
          : redis.commands().scan(page, args).toCompletableFuture(), deadline(), what);
      List<byte[]> keys = page.getKeys();
      List<CompletableFuture<byte[]>> values = new ArrayList<>(keys.size());
      for (byte[] key : keys) {
        values.add(redis.commands().get(key).toCompletableFuture());
      }
      long deadline = deadline();
      List<Change> due = new ArrayList<>();
      for (int i = 0; i < keys.size(); i++) {
        byte[] value = await(values.get(i), deadline, what);
        IdempotencyRecord record = value == null ? null : readable(keys.get(i), value);
        if (record == null) {
          continue; // gone since the SCAN, or not ours: a value that is not a record is left alone
        }
        if (purge && record.isExpired(now)) {
          due.add(new Change(keys.get(i), value, null));
        } else if (!purge) {
          IdempotencyRecord reaped = ClaimRules.reaped(record, now);
          if (reaped != null) {
            due.add(new Change(keys.get(i), value, RecordFormat.encode(reaped)));
          }
        }
      }
      for (int from = 0; from < due.size() && done < limit; ) {
        int to = Math.min(due.size(), from + limit - done);
        List<CompletableFuture<List<Object>>> swaps = new ArrayList<>(to - from);
        for (Change change : due.subList(from, to)) {
          swaps.add(swapAsync(change.key(), change.read(), change.next(), 0));
        }
        deadline = deadline();
        for (CompletableFuture<List<Object>> swap : swaps) {
          if (number(await(swap, deadline, what).get(0)) == 1L) {
            done++;
          }
        }
        from = to;
      }
    }
    return done;
  }

  /** A due record of a sweep: its key, the value read, what replaces it (null: delete). */
  private record Change(byte[] key, byte[] read, byte[] next) {}

  /** The record at {@code key}, or null when the value is not one (left alone by maintenance). */
  private IdempotencyRecord readable(byte[] key, byte[] value) {
    IdempotencyKey idempotencyKey = layout.idempotencyKey(key);
    if (idempotencyKey == null) {
      return null;
    }
    try {
      return RecordFormat.decode(idempotencyKey, value);
    } catch (IllegalStateException notARecord) {
      return null;
    }
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
