package dev.once.redis.internal;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Completion;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisCommandExecutionException;
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
import java.util.function.Supplier;

/**
 * The store's operations on records in {@link RecordFormat}: a claim is {@code SET … NX GET} (plus
 * a compare-and-set script when the record must change), every write under the token one Lua
 * script called by {@code EVALSHA}; every wait is bounded by the command timeout.
 */
public final class RedisEngine implements AutoCloseable {

  /** The FAIL script's flag: the attempt counts (a failure) or not (a release of unrun work). */
  private static final byte[] COUNTED = {'1'};
  private static final byte[] UNCOUNTED = {'0'};
  private static final byte[] EMPTY = new byte[0];
  /** How often a claim re-decides after its compare-and-set found the record changed. */
  private static final int MAX_SWAPS = 16;
  /** Keys a {@code SCAN} call of purge and reap asks for. */
  private static final int SCAN_PAGE = 1000;

  private final RedisConnector connector;
  private final KeyLayout layout;
  /** How many replicas must acknowledge each write ({@code Durability.replicas()}); 0: none. */
  private final int replicas;
  /** How long to wait for them ({@code Durability.timeout()}). */
  private final Duration replicaTimeout;
  private final Duration timeout;
  private final int maxPayloadBytes;

  public RedisEngine(RedisConnector connector, KeyLayout layout, int replicas,
      Duration replicaTimeout, Duration timeout, int maxPayloadBytes) {
    this.connector = connector;
    this.layout = layout;
    this.replicas = replicas;
    this.replicaTimeout = replicaTimeout;
    this.timeout = timeout;
    this.maxPayloadBytes = maxPayloadBytes;
  }

  // ---------------------------------------------------------------------------------------------
  // claims

  /**
   * {@code SET key new-record NX GET PX}: a new key is created and a replay, a duplicate in progress
   * or a mismatch answered in one command, no script. Only when the record must change (a takeover,
   * a retry, an expired record) the decision is made here, by {@link ClaimRules#decide}, and written
   * by the {@link Script#SWAP} compare-and-set: a second round trip, repeated with what the swap
   * found if another writer came first. The same claim re-sent (Lettuce re-sends a command whose
   * answer a dropped connection lost) finds the record its first copy wrote, with its claim id:
   * {@link ClaimRules#decide} answers it Acquired with that record's token, and nothing is written.
   */
  public Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    Batch batch = new Batch(List.of(request));
    try {
      settle(batch, List.of(0));
    } catch (RuntimeException e) {
      batch.failed(e);
    }
    if (batch.failure != null) {
      throw batch.thrown(false);
    }
    List<byte[]> acquired = acquiredKeys(batch);
    if (!acquired.isEmpty()) {
      awaitReplicas(acquired, "claim of " + request.key());
    }
    return batch.claims[0];
  }

  /**
   * Pipelined: every request is sent before any answer is awaited, so a batch of distinct keys
   * costs one round trip (in a cluster, one per master, in parallel), and the records that must
   * change one more. A key requested again in the batch goes in a later wave, after the earlier
   * answers, so it sees the earlier claim.
   *
   * <p>All or nothing for the caller: every answer of a wave is collected before anything is
   * decided, also the answers that come after a failed one; when any failed, no later wave or
   * compare-and-set is sent, every claim the batch acquired is released as FAILED, and so is every
   * claim whose write went unanswered, if it took effect (checked by its claim id), and then the
   * first failure is thrown.
   */
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    Objects.requireNonNull(requests, "requests");
    int n = requests.size();
    int[] wave = new int[n];
    Map<IdempotencyKey, Integer> seen = new HashMap<>();
    int waves = 0;
    for (int i = 0; i < n; i++) {
      ClaimRequest request = Objects.requireNonNull(requests.get(i), "request " + i);
      wave[i] = seen.merge(request.key(), 1, Integer::sum) - 1;
      waves = Math.max(waves, wave[i] + 1);
    }
    Batch batch = new Batch(requests);
    try {
      for (int w = 0; w < waves && batch.failure == null; w++) {
        List<Integer> indexes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          if (wave[i] == w) {
            indexes.add(i);
          }
        }
        settle(batch, indexes);
      }
      List<byte[]> acquired = acquiredKeys(batch);
      if (batch.failure == null && !acquired.isEmpty()) {
        awaitReplicas(acquired, "batch claim of " + acquired.size() + " keys");
      }
    } catch (RuntimeException e) {
      batch.failed(e);
    }
    if (batch.failure != null) {
      boolean released = release(batch);
      throw batch.thrown(released);
    }
    return Arrays.asList(batch.claims);
  }

  /**
   * A claim of one or more requests in progress: the answers so far, the writes whose answer never
   * came (they may have taken effect), and the first failure (later ones are suppressed in it).
   */
  private static final class Batch {
    final List<ClaimRequest> requests;
    final Claim[] claims;
    /** Writes of this batch left unanswered: the request's index and the token the write gave. */
    final List<long[]> unanswered = new ArrayList<>();
    RuntimeException failure;

    Batch(List<ClaimRequest> requests) {
      this.requests = requests;
      this.claims = new Claim[requests.size()];
    }

    void failed(RuntimeException e) {
      if (failure == null) {
        failure = e;
      } else if (failure != e) {
        failure.addSuppressed(e);
      }
    }

    /** A write that failed: its answer may have been lost after it took effect. */
    void failed(StoreUnavailableException e, int index, long token) {
      failed(e);
      if (e.mayHaveBeenApplied()) {
        unanswered.add(new long[] {index, token});
      }
    }

    /**
     * The failure to throw: a {@link StoreUnavailableException} says it may have been applied when
     * anything of the batch was (or may have been) written, {@code released} included.
     */
    RuntimeException thrown(boolean released) {
      if (failure instanceof StoreUnavailableException e && !e.mayHaveBeenApplied()
          && (released || !unanswered.isEmpty())) {
        return mayHaveBeenApplied(e);
      }
      return failure;
    }
  }

  /** The keys of the batch's claims answered Acquired. */
  private List<byte[]> acquiredKeys(Batch batch) {
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < batch.claims.length; i++) {
      if (batch.claims[i] instanceof Claim.Acquired) {
        keys.add(layout.record(batch.requests.get(i).key()));
      }
    }
    return keys;
  }

  /**
   * Claims the requests at {@code indexes} (distinct keys), pipelined, answering into the batch.
   * Every reply is collected before anything is decided; after a failure nothing more is sent.
   */
  private void settle(Batch batch, List<Integer> indexes) {
    RedisAccess redis = connector.access(indexes.size() == 1
        ? "claim of " + batch.requests.get(indexes.get(0)).key()
        : "batch claim of " + indexes.size() + " keys");
    int m = indexes.size();
    List<byte[]> keys = new ArrayList<>(m);
    List<ClaimRules.Decision> creations = new ArrayList<>(m);
    List<CompletableFuture<byte[]>> firsts = new ArrayList<>(m);
    for (int i : indexes) {
      ClaimRequest request = batch.requests.get(i);
      ClaimRules.Decision creation = ClaimRules.decide(null, request);
      byte[] key = layout.record(request.key());
      keys.add(key);
      creations.add(creation);
      firsts.add(send(() -> redis.commands().setGet(key, RecordFormat.encode(creation.next()),
          SetArgs.Builder.nx().px(Expiry.ttlMillis(request.expiresAt(), request.now())))));
    }
    long deadline = deadline();
    List<Swap> swaps = new ArrayList<>();
    for (int j = 0; j < m; j++) {
      int i = indexes.get(j);
      byte[] previous;
      try {
        previous = await(firsts.get(j), deadline, "claim of " + batch.requests.get(i).key());
      } catch (StoreUnavailableException e) {
        batch.failed(e, i, ((Claim.Acquired) creations.get(j).claim()).token());
        continue;
      }
      if (previous == null) {
        // SET NX wrote the new record.
        batch.claims[i] = creations.get(j).claim();
      } else {
        swaps.add(new Swap(i, keys.get(j), previous));
      }
    }
    for (int round = 0; !swaps.isEmpty() && batch.failure == null; round++) {
      if (round == MAX_SWAPS) {
        batch.failed(new StoreUnavailableException("the record of "
            + batch.requests.get(swaps.get(0).index).key() + " changed under " + MAX_SWAPS
            + " claims in a row (" + description() + "); retry as for any store error", null,
            false));
        return;
      }
      for (Swap swap : swaps) {
        ClaimRequest request = batch.requests.get(swap.index);
        try {
          IdempotencyRecord current = swap.current == null ? null
              : RecordFormat.decode(request.key(), swap.current);
          swap.decision = ClaimRules.decide(current, request);
        } catch (RuntimeException notARecord) {
          batch.failed(notARecord);
        }
      }
      if (batch.failure != null) {
        return; // nothing of this round sent
      }
      List<Swap> writing = new ArrayList<>();
      for (Swap swap : swaps) {
        ClaimRequest request = batch.requests.get(swap.index);
        if (swap.decision.next() == null) {
          batch.claims[swap.index] = swap.decision.claim();
        } else {
          swap.reply = swapAsync(redis, swap.key, swap.current,
              RecordFormat.encode(swap.decision.next()),
              Expiry.ttlMillis(swap.decision.next().expiresAt(), request.now()));
          writing.add(swap);
        }
      }
      deadline = deadline();
      swaps = new ArrayList<>();
      for (Swap swap : writing) {
        List<Object> reply;
        try {
          reply = await(swap.reply, deadline, "claim of " + batch.requests.get(swap.index).key());
        } catch (StoreUnavailableException e) {
          batch.failed(e, swap.index, ((Claim.Acquired) swap.decision.claim()).token());
          continue;
        }
        if (number(reply.get(0)) == 1L) {
          batch.claims[swap.index] = swap.decision.claim();
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
  private CompletableFuture<List<Object>> swapAsync(RedisAccess redis, byte[] key, byte[] current,
      byte[] next, long ttlMillis) {
    return run(redis, Script.SWAP, ScriptOutputType.MULTI, new byte[][] {key},
        current == null ? EMPTY : current, next == null ? EMPTY : next,
        ttlMillis > 0 ? number(ttlMillis) : EMPTY);
  }

  /**
   * After a failed batch claim: gives back as FAILED every claim the batch answered Acquired, by
   * the FAIL script under its token; and every write left unanswered, if it took effect: read
   * back, and changed by compare-and-set only if it is IN_PROGRESS under the write's token with
   * the request's claim id (a blind FAIL could hit another claimant's record with an equal first
   * token). Pipelined and best effort (no replica wait): a release that fails leaves its lease to
   * run out, and is added to the failure as suppressed. Returns whether anything was sent.
   */
  private boolean release(Batch batch) {
    RuntimeException failure = batch.failure;
    RedisAccess redis;
    try {
      redis = connector.access("release after a failed batch claim");
    } catch (RuntimeException e) {
      failure.addSuppressed(e);
      return false;
    }
    String error = "released: the batch claim failed: " + failure;
    List<CompletableFuture<Long>> releases = new ArrayList<>();
    for (int i = 0; i < batch.claims.length; i++) {
      if (batch.claims[i] instanceof Claim.Acquired acquired) {
        releases.add(failAsync(redis, batch.requests.get(i), acquired.token(), error));
      }
    }
    List<CompletableFuture<byte[]>> reads = new ArrayList<>();
    for (long[] write : batch.unanswered) {
      byte[] key = layout.record(batch.requests.get((int) write[0]).key());
      reads.add(send(() -> redis.commands().get(key)));
    }
    if (releases.isEmpty() && reads.isEmpty()) {
      return false;
    }
    long deadline = deadline();
    for (CompletableFuture<Long> release : releases) {
      try {
        await(release, deadline, "release after a failed batch claim");
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
    List<CompletableFuture<List<Object>>> swaps = new ArrayList<>();
    for (int u = 0; u < reads.size(); u++) {
      ClaimRequest request = batch.requests.get((int) batch.unanswered.get(u)[0]);
      long token = batch.unanswered.get(u)[1];
      try {
        byte[] value = await(reads.get(u), deadline, "release after a failed batch claim");
        IdempotencyRecord r = value == null ? null : RecordFormat.decode(request.key(), value);
        if (r != null && r.token() == token && ClaimRules.isOwnClaim(r, request)) {
          Instant now = request.now();
          IdempotencyRecord released = ClaimRules.released(r, error, now, request.retention());
          swaps.add(swapAsync(redis, layout.record(request.key()), value,
              RecordFormat.encode(released), Expiry.ttlMillis(released.expiresAt(), now)));
        }
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
    deadline = deadline();
    for (CompletableFuture<List<Object>> swap : swaps) {
      try {
        await(swap, deadline, "release after a failed batch claim");
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
    return true;
  }

  /** The FAIL script for the claim of {@code request} under {@code token}. */
  private CompletableFuture<Long> failAsync(RedisAccess redis, ClaimRequest request, long token,
      String error) {
    return run(redis, Script.FAIL, ScriptOutputType.INTEGER,
        new byte[][] {layout.record(request.key())}, number(token),
        number(RecordFormat.micros(request.now())),
        number(RecordFormat.micros(request.now().plus(request.retention()))), utf8(error),
        UNCOUNTED, Expiry.MARGIN_ARGUMENT);
  }

  // ---------------------------------------------------------------------------------------------
  // writes under the fencing token

  /**
   * The COMPLETE script. The same completion repeated after it was applied (re-sent by Lettuce
   * after a reconnect, or retried by the caller) finds the record COMPLETED under the token with the
   * same outcome and is acknowledged by the script's failure branch, changing nothing.
   */
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    if (outcome.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("outcome of " + key, outcome.size(), maxPayloadBytes);
    }
    String what = "complete of " + key;
    RedisAccess redis = connector.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, completeAsync(redis, keys, token, outcome, now,
        retention));
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
    RedisAccess redis = connector.access("batch completion of " + completions.size() + " keys");
    List<byte[][]> keys = new ArrayList<>(completions.size());
    List<CompletableFuture<Long>> replies = new ArrayList<>(completions.size());
    for (Completion c : completions) {
      byte[][] k = {layout.record(c.key())};
      keys.add(k);
      replies.add(completeAsync(redis, k, c.token(), c.outcome(), now, retention));
    }
    long deadline = deadline();
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    List<byte[]> stored = new ArrayList<>(completions.size());
    for (int i = 0; i < completions.size(); i++) {
      IdempotencyKey key = completions.get(i).key();
      long reply;
      try {
        reply = await(replies.get(i), deadline, "batch completion of " + key);
      } catch (StoreUnavailableException e) {
        // The other completions of the batch may be stored.
        throw completions.size() > 1 ? mayHaveBeenApplied(e) : e;
      }
      if (reply == 1L) {
        stored.add(keys.get(i)[0]);
      } else {
        lost.add(key);
      }
    }
    if (!stored.isEmpty()) {
      awaitReplicas(redis, stored, "batch completion of " + stored.size() + " keys");
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
        RecordFormat.tail(now, expiresAt, outcome), number(Math.max(1, Expiry.ttlMillis(expiresAt, now))));
  }

  /**
   * The FAIL script; as for {@link #complete}, the same failure repeated after it was applied is
   * acknowledged.
   */
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    fail("fail of ", key, token, error, now, retention, COUNTED);
  }

  /** The FAIL script, one attempt fewer: the work of the claim released never ran. */
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    fail("release of ", key, token, reason, now, retention, UNCOUNTED);
  }

  private void fail(String operation, IdempotencyKey key, long token, String error, Instant now,
      Duration retention, byte[] counted) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    String what = operation + key;
    RedisAccess redis = connector.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, run(redis, Script.FAIL, ScriptOutputType.INTEGER, keys,
        number(token), number(RecordFormat.micros(now)), number(RecordFormat.micros(now.plus(retention))),
        utf8(error), counted, Expiry.MARGIN_ARGUMENT));
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    long leaseUntil = RecordFormat.micros(now.plus(lease));
    String what = "extend of " + key;
    RedisAccess redis = connector.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, run(redis, Script.EXTEND, ScriptOutputType.INTEGER, keys,
        number(token), number(RecordFormat.micros(now)), number(leaseUntil), Expiry.MARGIN_ARGUMENT));
    return EpochMicros.toInstant(leaseUntil);
  }

  /**
   * The EXTEND script for each claim, pipelined: one round trip for a batch heartbeat. A claim
   * whose script answers 0 is no longer held.
   */
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    Objects.requireNonNull(claims, "claims");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(lease, "lease");
    if (claims.isEmpty()) {
      return Set.of();
    }
    long leaseUntil = RecordFormat.micros(now.plus(lease));
    RedisAccess redis = connector.access("batch extension of " + claims.size() + " keys");
    List<byte[]> keys = new ArrayList<>(claims.size());
    List<CompletableFuture<Long>> replies = new ArrayList<>(claims.size());
    for (HeldClaim claim : claims) {
      byte[][] k = {layout.record(claim.key())};
      keys.add(k[0]);
      replies.add(run(redis, Script.EXTEND, ScriptOutputType.INTEGER, k, number(claim.token()),
          number(RecordFormat.micros(now)), number(leaseUntil), Expiry.MARGIN_ARGUMENT));
    }
    long deadline = deadline();
    Set<IdempotencyKey> lost = new LinkedHashSet<>();
    List<byte[]> extended = new ArrayList<>(claims.size());
    for (int i = 0; i < claims.size(); i++) {
      IdempotencyKey key = claims.get(i).key();
      if (await(replies.get(i), deadline, "batch extension of " + key) == 1L) {
        extended.add(keys.get(i));
      } else {
        lost.add(key);
      }
    }
    if (!extended.isEmpty()) {
      awaitReplicas(redis, extended, "batch extension of " + extended.size() + " keys");
    }
    return lost;
  }

  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(checkpoint, "checkpoint");
    Objects.requireNonNull(now, "now");
    if (checkpoint.size() > maxPayloadBytes) {
      throw new PayloadTooLargeException("checkpoint " + checkpoint.name() + " of " + key,
          checkpoint.size(), maxPayloadBytes);
    }
    String what = "checkpoint of " + key;
    RedisAccess redis = connector.access(what);
    byte[][] keys = {layout.record(key)};
    write(redis, key, token, keys, what, run(redis, Script.CHECKPOINT, ScriptOutputType.INTEGER,
        keys, number(token), number(RecordFormat.micros(now)), utf8(checkpoint.name()), checkpoint.data(),
        Expiry.MARGIN_ARGUMENT));
  }

  private void write(RedisAccess redis, IdempotencyKey key, long token, byte[][] keys,
      String what, CompletableFuture<Long> reply) {
    if (await(reply, deadline(), what) != 1L) {
      throw new LeaseLostException(key, token);
    }
    awaitReplicas(redis, List.of(keys[0]), what);
  }

  // ---------------------------------------------------------------------------------------------
  // reads and maintenance

  /** {@code GET}; a failure says nothing was applied (a read changes nothing). */
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    Objects.requireNonNull(key, "key");
    String what = "find of " + key;
    RedisAccess redis = connector.access(what);
    byte[] value;
    try {
      value = await(send(() -> redis.commands().get(layout.record(key))), deadline(), what);
    } catch (StoreUnavailableException e) {
      throw e.mayHaveBeenApplied() ? new StoreUnavailableException(e.getMessage(), e.getCause(),
          false) : e;
    }
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
    RedisAccess redis = connector.access(what);
    ScanArgs args = ScanArgs.Builder.matches(layout.pattern()).limit(SCAN_PAGE);
    int done = 0;
    boolean changing = false;
    try {
      KeyScanCursor<byte[]> page = null;
      while (done < limit && (page == null || !page.isFinished())) {
        KeyScanCursor<byte[]> cursor = page;
        page = await(send(() -> cursor == null ? redis.commands().scan(args)
            : redis.commands().scan(cursor, args)), deadline(), what);
        List<byte[]> keys = page.getKeys();
        List<CompletableFuture<byte[]>> values = new ArrayList<>(keys.size());
        for (byte[] key : keys) {
          values.add(send(() -> redis.commands().get(key)));
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
          changing = true;
          for (Change change : due.subList(from, to)) {
            swaps.add(swapAsync(redis, change.key(), change.read(), change.next(), 0));
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
    } catch (StoreUnavailableException e) {
      throw changing ? mayHaveBeenApplied(e) : e;
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

  /** A command's reply; a command that cannot even be queued fails the reply, never the caller. */
  private static <T> CompletableFuture<T> send(Supplier<? extends CompletionStage<T>> command) {
    try {
      return command.get().toCompletableFuture();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** EVALSHA, falling back to EVAL (which caches the script) when the server answers NOSCRIPT. */
  private <T> CompletableFuture<T> run(RedisAccess redis, Script script, ScriptOutputType type,
      byte[][] keys, byte[]... args) {
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

  /**
   * {@code WAIT} after writes that took effect: whatever goes wrong here, they may survive
   * ({@link StoreUnavailableException#mayHaveBeenApplied()} true).
   */
  private void awaitReplicas(List<byte[]> keys, String what) {
    if (this.replicas > 0) {
      awaitReplicas(connector.access(what), keys, what);
    }
  }

  private void awaitReplicas(RedisAccess redis, List<byte[]> keys, String what) {
    int replicas = this.replicas;
    if (replicas == 0) {
      return;
    }
    long deadline = System.nanoTime() + timeout.toNanos() + replicaTimeout.toNanos();
    long acknowledged;
    try {
      acknowledged = await(send(() -> redis.waitForReplicas(keys, replicas, replicaTimeout)),
          deadline, "WAIT after " + what);
    } catch (StoreUnavailableException e) {
      throw mayHaveBeenApplied(e);
    }
    if (acknowledged < replicas) {
      throw new StoreUnavailableException("only " + acknowledged + " of " + replicas
          + " replicas acknowledged the " + what + " within " + replicaTimeout.toMillis()
          + " ms (" + description() + "); the write is on the primary and may survive,"
          + " retry as for any store error", null, true);
    }
  }

  /** {@code e}, saying that the call may have been applied. */
  private static StoreUnavailableException mayHaveBeenApplied(StoreUnavailableException e) {
    if (e.mayHaveBeenApplied()) {
      return e;
    }
    StoreUnavailableException applied = new StoreUnavailableException(e.getMessage(), e.getCause(),
        true);
    applied.setStackTrace(e.getStackTrace());
    for (Throwable suppressed : e.getSuppressed()) {
      applied.addSuppressed(suppressed);
    }
    return applied;
  }

  private long deadline() {
    return System.nanoTime() + timeout.toNanos();
  }

  /**
   * The reply, within the deadline. A Redis error reply (WRONGTYPE, OOM, READONLY, CLUSTERDOWN,
   * LOADING, BUSY …) means the command was refused before it changed anything: every command and
   * script of the store writes at most once, last; so such failures say
   * {@code mayHaveBeenApplied() == false}. A timeout or a lost connection may have lost the answer
   * of a command that took effect: true.
   */
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
          + description() + ") to answer the " + what, e);
    }
  }

  private StoreUnavailableException timedOut(String what, Throwable cause) {
    return new StoreUnavailableException("Redis (" + description() + ") did not answer the "
        + what + " within the command timeout of " + timeout.toMillis() + " ms", cause);
  }

  private StoreUnavailableException unavailable(String what, Throwable cause) {
    if (cause instanceof RedisCommandTimeoutException) {
      return timedOut(what, cause);
    }
    if (cause instanceof RedisConnectionException) {
      return new StoreUnavailableException("cannot reach Redis (" + description()
          + ") for the " + what + ": " + cause.getMessage(), cause);
    }
    return new StoreUnavailableException("Redis (" + description() + ") failed the " + what
        + ": " + cause, cause, !(cause instanceof RedisCommandExecutionException));
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
    return connector.description();
  }

  /** Closes the connection, and the client when the store owns it. */
  @Override
  public void close() {
    connector.close();
  }
}
