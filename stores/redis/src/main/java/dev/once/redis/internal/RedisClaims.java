package dev.once.redis.internal;

import static dev.once.redis.internal.RedisCalls.bytes;
import static dev.once.redis.internal.RedisCalls.number;
import static dev.once.redis.internal.RedisCalls.send;

import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.IdempotencyRecord;
import io.lettuce.core.SetArgs;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The claim protocol: {@code SET key new-record NX GET PX} creates a new key, or answers a replay,
 * a duplicate in progress or a mismatch, in one command and no script. Only when the record must
 * change (a takeover, a retry, an expired record) the decision is made here, by
 * {@link ClaimRules#decide}, and written by the {@link Script#SWAP} compare-and-set: a second round
 * trip, repeated with what the swap found if another writer came first.
 *
 * <p>Written for a batch ({@link #claimAll}); a single claim is a batch of one, so that both share
 * the pipelining, the failure handling and the release of a failed batch.
 */
final class RedisClaims {

  /** How often a claim re-decides after its compare-and-set found the record changed. */
  private static final int MAX_SWAPS = 16;
  private static final String RELEASE = "release after a failed batch claim";
  /** The indexes of a single claim's batch. */
  private static final int[] ONLY_THE_FIRST = {0};

  private final RedisCalls calls;
  private final KeyLayout layout;
  /** Gives back, by the fenced FAIL script, what a failed batch acquired. */
  private final RedisFencedWrites writes;

  RedisClaims(RedisCalls calls, KeyLayout layout, RedisFencedWrites writes) {
    this.calls = calls;
    this.layout = layout;
    this.writes = writes;
  }

  /**
   * One claim. The same claim re-sent (Lettuce re-sends a command whose answer a dropped
   * connection lost) finds the record its first copy wrote, with its claim id:
   * {@link ClaimRules#decide} answers it Acquired with that record's token, and nothing is written.
   */
  Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    Batch batch = new Batch(List.of(request));
    try {
      settle(batch, ONLY_THE_FIRST);
    } catch (RuntimeException e) {
      batch.failed(e);
    }
    if (batch.failure != null) {
      throw batch.thrown(false);
    }
    List<byte[]> acquired = acquiredKeys(batch);
    if (!acquired.isEmpty()) {
      calls.awaitReplicas(acquired, new Operation("claim", request.key()));
    }
    return batch.claims[0];
  }

  /**
   * {@link #claim} without blocking: the same commands, each sent when the answer before it came,
   * decided on Lettuce's thread (decoding and {@link ClaimRules#decide} only; nothing there
   * blocks). Only what must wait goes to {@code blocking}: the first connection, opened while none
   * is, and the read-back and release of a write whose answer was lost ({@link #release}).
   */
  CompletableFuture<Claim> claimAsync(ClaimRequest request, Executor blocking) {
    Objects.requireNonNull(request, "request");
    RedisAccess redis = calls.opened();
    if (redis == null) {
      return CompletableFuture.supplyAsync(() -> claim(request), blocking);
    }
    Operation what = new Operation("claim", request.key());
    byte[] key = layout.record(request.key());
    Batch batch = new Batch(List.of(request));
    CompletableFuture<Claim> claimed;
    try {
      ClaimRules.Decision creation = ClaimRules.decide(null, request);
      claimed = calls.within(send(() -> redis.commands().setGet(key,
              RecordFormat.encode(creation.next()),
              SetArgs.Builder.nx().px(Expiry.ttlMillis(request.expiresAt(), request.now())))), what)
          .handle((previous, failure) -> {
            if (failure != null) {
              throw batch.failedAsync(failure, ((Claim.Acquired) creation.claim()).token());
            }
            // null: SET NX wrote the new record.
            return previous == null ? CompletableFuture.completedFuture(creation.claim())
                : swapAsync(redis, batch, key, previous, 0);
          })
          .thenCompose(claim -> claim);
    } catch (RuntimeException e) {
      claimed = CompletableFuture.failedFuture(e);
    }
    return claimed
        .thenCompose(claim -> !(claim instanceof Claim.Acquired) ? CompletableFuture.completedFuture(
            claim) : calls.awaitReplicasAsync(redis, List.of(key), what).thenApply(v -> claim))
        .exceptionallyCompose(failure -> {
          if (batch.unanswered.isEmpty()) {
            return CompletableFuture.failedFuture(RedisCalls.unwrap(failure));
          }
          // A write whose answer was lost may have taken effect: read back and give it back, on a
          // thread that may wait.
          try {
            return CompletableFuture.<Claim>supplyAsync(() -> {
              throw batch.thrown(release(batch));
            }, blocking);
          } catch (RuntimeException refused) {
            // No thread to release on: the write, if it took effect, waits for its lease to pass.
            batch.failure.addSuppressed(refused);
            return CompletableFuture.failedFuture(batch.thrown(false));
          }
        });
  }

  /**
   * The compare-and-set rounds of {@link #settle} for one key, without blocking: decide on the
   * record found, write by {@link Script#SWAP}, again on what it found if another writer came
   * first.
   */
  private CompletableFuture<Claim> swapAsync(RedisAccess redis, Batch batch, byte[] key,
      byte[] current, int round) {
    ClaimRequest request = batch.requests.get(0);
    if (round == MAX_SWAPS) {
      return CompletableFuture.failedFuture(changedTooOften(request));
    }
    ClaimRules.Decision decision = ClaimRules.decide(
        current == null ? null : RecordFormat.decode(request.key(), current), request);
    if (decision.next() == null) {
      return CompletableFuture.completedFuture(decision.claim());
    }
    return calls.within(RedisCalls.swap(redis, key, current, RecordFormat.encode(decision.next()),
            Expiry.ttlMillis(decision.next().expiresAt(), request.now())),
            new Operation("claim", request.key()))
        .handle((reply, failure) -> {
          if (failure != null) {
            throw batch.failedAsync(failure, ((Claim.Acquired) decision.claim()).token());
          }
          return number(reply.get(0)) == 1L ? CompletableFuture.completedFuture(decision.claim())
              : swapAsync(redis, batch, key, reply.size() > 1 ? bytes(reply.get(1)) : null,
                  round + 1);
        })
        .thenCompose(claim -> claim);
  }

  private StoreUnavailableException changedTooOften(ClaimRequest request) {
    return new StoreUnavailableException("the record of " + request.key() + " changed under "
        + MAX_SWAPS + " claims in a row (" + calls.description() + "); retry as for any store"
        + " error", null, false);
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
  List<Claim> claimAll(List<ClaimRequest> requests) {
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
        int size = 0;
        for (int i = 0; i < n; i++) {
          if (wave[i] == w) {
            size++;
          }
        }
        int[] indexes = new int[size];
        for (int i = 0, j = 0; i < n; i++) {
          if (wave[i] == w) {
            indexes[j++] = i;
          }
        }
        settle(batch, indexes);
      }
      List<byte[]> acquired = acquiredKeys(batch);
      if (batch.failure == null && !acquired.isEmpty()) {
        calls.awaitReplicas(acquired, "batch claim of " + acquired.size() + " keys");
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
    /** Each request's record key, once made ({@link KeyLayout#record}). */
    final byte[][] keys;
    /** Writes of this batch left unanswered: the request's index and the token the write gave. */
    final List<long[]> unanswered = new ArrayList<>();
    RuntimeException failure;

    Batch(List<ClaimRequest> requests) {
      this.requests = requests;
      this.claims = new Claim[requests.size()];
      this.keys = new byte[requests.size()][];
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
     * A write of request 0 that failed, on the asynchronous path: recorded as {@link #failed} does
     * (with the token the write gave), and returned to be thrown.
     */
    RuntimeException failedAsync(Throwable failure, long token) {
      Throwable cause = RedisCalls.unwrap(failure);
      if (cause instanceof StoreUnavailableException e) {
        failed(e, 0, token);
        return e;
      }
      RuntimeException e = cause instanceof RuntimeException r ? r
          : new StoreUnavailableException("the claim of " + requests.get(0).key() + " failed: "
              + cause, cause);
      failed(e);
      return e;
    }

    /**
     * The failure to throw: a {@link StoreUnavailableException} says it may have been applied when
     * anything of the batch was (or may have been) written, {@code released} included.
     */
    RuntimeException thrown(boolean released) {
      if (failure instanceof StoreUnavailableException e && !e.mayHaveBeenApplied()
          && (released || !unanswered.isEmpty())) {
        return RedisCalls.mayHaveBeenApplied(e);
      }
      return failure;
    }
  }

  /** The keys of the batch's claims answered Acquired. */
  private List<byte[]> acquiredKeys(Batch batch) {
    if (batch.claims.length == 1) {
      return batch.claims[0] instanceof Claim.Acquired ? List.of(batch.keys[0]) : List.of();
    }
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < batch.claims.length; i++) {
      if (batch.claims[i] instanceof Claim.Acquired) {
        byte[] key = batch.keys[i];
        keys.add(key != null ? key : layout.record(batch.requests.get(i).key()));
      }
    }
    return keys;
  }

  /**
   * Claims the requests at {@code indexes} (distinct keys), pipelined, answering into the batch.
   * Every reply is collected before anything is decided; after a failure nothing more is sent.
   */
  private void settle(Batch batch, int[] indexes) {
    int m = indexes.length;
    RedisAccess redis = calls.access(m == 1
        ? new Operation("claim", batch.requests.get(indexes[0]).key())
        : "batch claim of " + m + " keys");
    // Arrays, not lists: a single claim comes through here too, and pays for every object.
    ClaimRules.Decision[] creations = new ClaimRules.Decision[m];
    @SuppressWarnings("unchecked")
    CompletableFuture<byte[]>[] firsts = new CompletableFuture[m];
    for (int j = 0; j < m; j++) {
      ClaimRequest request = batch.requests.get(indexes[j]);
      ClaimRules.Decision creation = ClaimRules.decide(null, request);
      byte[] key = layout.record(request.key());
      batch.keys[indexes[j]] = key;
      creations[j] = creation;
      firsts[j] = send(() -> redis.commands().setGet(key, RecordFormat.encode(creation.next()),
          SetArgs.Builder.nx().px(Expiry.ttlMillis(request.expiresAt(), request.now()))));
    }
    long deadline = calls.deadline();
    List<Swap> swaps = List.of();
    for (int j = 0; j < m; j++) {
      int i = indexes[j];
      byte[] previous;
      try {
        previous = calls.await(firsts[j], deadline,
            new Operation("claim", batch.requests.get(i).key()));
      } catch (StoreUnavailableException e) {
        batch.failed(e, i, ((Claim.Acquired) creations[j].claim()).token());
        continue;
      }
      if (previous == null) {
        // SET NX wrote the new record.
        batch.claims[i] = creations[j].claim();
      } else {
        if (swaps.isEmpty()) {
          swaps = new ArrayList<>();
        }
        swaps.add(new Swap(i, batch.keys[i], previous));
      }
    }
    for (int round = 0; !swaps.isEmpty() && batch.failure == null; round++) {
      if (round == MAX_SWAPS) {
        batch.failed(changedTooOften(batch.requests.get(swaps.get(0).index)));
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
          swap.reply = RedisCalls.swap(redis, swap.key, swap.current,
              RecordFormat.encode(swap.decision.next()),
              Expiry.ttlMillis(swap.decision.next().expiresAt(), request.now()));
          writing.add(swap);
        }
      }
      deadline = calls.deadline();
      swaps = new ArrayList<>();
      for (Swap swap : writing) {
        List<Object> reply;
        try {
          reply = calls.await(swap.reply, deadline,
              new Operation("claim", batch.requests.get(swap.index).key()));
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
      redis = calls.access(RELEASE);
    } catch (RuntimeException e) {
      failure.addSuppressed(e);
      return false;
    }
    String error = "released: the batch claim failed: " + failure;
    List<CompletableFuture<Long>> releases = new ArrayList<>();
    for (int i = 0; i < batch.claims.length; i++) {
      if (batch.claims[i] instanceof Claim.Acquired acquired) {
        ClaimRequest request = batch.requests.get(i);
        releases.add(writes.releaseAsync(redis, request.key(), acquired.token(), error,
            request.now(), request.retention()));
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
    long deadline = calls.deadline();
    for (CompletableFuture<Long> release : releases) {
      try {
        calls.await(release, deadline, RELEASE);
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
    List<CompletableFuture<List<Object>>> swaps = new ArrayList<>();
    for (int u = 0; u < reads.size(); u++) {
      ClaimRequest request = batch.requests.get((int) batch.unanswered.get(u)[0]);
      long token = batch.unanswered.get(u)[1];
      try {
        byte[] value = calls.await(reads.get(u), deadline, RELEASE);
        IdempotencyRecord r = value == null ? null : RecordFormat.decode(request.key(), value);
        if (r != null && r.token() == token && ClaimRules.isOwnClaim(r, request)) {
          Instant now = request.now();
          IdempotencyRecord released = ClaimRules.released(r, error, now, request.retention());
          swaps.add(RedisCalls.swap(redis, layout.record(request.key()), value,
              RecordFormat.encode(released), Expiry.ttlMillis(released.expiresAt(), now)));
        }
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
    deadline = calls.deadline();
    for (CompletableFuture<List<Object>> swap : swaps) {
      try {
        calls.await(swap, deadline, RELEASE);
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
      }
    }
    return true;
  }
}
