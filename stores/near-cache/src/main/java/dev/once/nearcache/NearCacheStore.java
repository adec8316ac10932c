package dev.once.nearcache;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.nearcache.internal.CompletedRecord;
import dev.once.nearcache.internal.CompletedRecords;
import dev.once.nearcache.internal.OwnClaims;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * A bounded in-memory cache of COMPLETED records in front of any {@link IdempotencyStore}: a
 * duplicate of a finished key is answered ({@link Claim.Replay}, or {@link Claim.Mismatch} for
 * another fingerprint) without a store round trip. Everything else goes to the store.
 *
 * <pre>{@code
 * IdempotencyStore store = NearCacheStore.wrap(JdbcStore.builder(dataSource).build())
 *     .maximumSize(100_000)
 *     .build();
 * Once once = Once.builder(store).build();
 * }</pre>
 *
 * <h2>Why a completed record may be answered from memory</h2>
 *
 * A COMPLETED record does not change until it expires. Through the SPI nothing can change it:
 * {@code complete}, {@code fail}, {@code extend} and {@code checkpoint} are fenced on an
 * IN_PROGRESS record under the caller's token and refuse a completed one; {@code claim} answers
 * it with Replay or Mismatch and leaves it as it is ({@link dev.once.spi.ClaimRules#decide});
 * {@code reapExpiredLeases} touches IN_PROGRESS records only; {@code purgeExpired(now)} deletes
 * only records expired at {@code now}. So until its {@code expiresAt}, every claim of the key
 * — on any instance — is decided from the same record, and this cache decides it the same way:
 * a request whose {@code now} is before {@code expiresAt} gets Replay with the record's outcome and
 * token when its fingerprint is the record's, Mismatch otherwise (a terminal failure and the
 * "not stored" marker are outcomes like any other). From {@code expiresAt} on the key behaves as
 * new, and the cache sends the request to the store.
 *
 * <p>IN_PROGRESS and FAILED records are never cached: they change with every claim.
 *
 * <h2>Where records come from</h2>
 *
 * <ul>
 *   <li>A {@code complete} or {@code completeAll} through this store that the store accepted, for
 *       a claim acquired through this store (its fingerprint is the claim's). The expiry is the
 *       completion's {@code now + retention}, floored to microseconds, the coarsest time a store
 *       may keep — never later than the stored one. A completion repeated after its answer was
 *       lost is acknowledged by the store without a change, so the earliest completion sent for
 *       the claim is the one that counts (see {@code OwnClaims} in the implementation). This
 *       needs every completion of a claim acquired here to go through this instance, as
 *       {@code Once} and the batch engine do; a claim completed elsewhere is simply not learned
 *       from its completion.
 *   <li>A Replay answered by the store to a single {@code claim}, when
 *       {@link Builder#learnFromReplays} is on (the default): the answer does not carry the
 *       record's expiry, so the store is asked once for the record ({@link #find}) and the
 *       record is kept if it is still COMPLETED under the replayed token. This costs one read the
 *       first time an instance sees a replay of a key. {@code claimAll} answers are not read
 *       this way (one read per key would undo the batch).
 * </ul>
 *
 * <h2>Time</h2>
 *
 * Answers use the request's {@code now} (the caller's clock, as the SPI requires), never wall
 * time: an entry answers no claim whose {@code now} is at or after its record's
 * {@code expiresAt}. Caffeine's own clock is the latest {@code now} callers have passed, so it
 * frees an entry's memory once the callers' time has passed its expiry; answers never depend on
 * it. A {@link #purgeExpired} through this store stops answers for every record expiring at or
 * before its {@code now} at once, since the purge may have deleted them.
 *
 * <h2>Several instances</h2>
 *
 * Each instance caches on its own; they never disagree, because a completed record is the same
 * for all of them until it expires. Hosts' clocks differ as they always do: around a record's
 * expiry, an instance answers by its callers' clocks, as the store would for those callers.
 *
 * <h2>What can make the cache wrong, and what to do</h2>
 *
 * Only a change made outside the SPI: a completed record deleted or edited by hand (SQL
 * {@code DELETE}, Redis {@code DEL}, {@code InMemoryStore.clear()}), restored from an older
 * backup, lost by the store (Redis evicting keys under memory pressure), or purged by another
 * process with a clock far ahead. Instances that hold the record keep replaying it until its
 * expiry. After such a change call {@link #invalidate} (or {@link #invalidateAll}) on every
 * instance, or restart them.
 *
 * <p>Thread-safe. Bounded by {@link Builder#maximumSize} records (least recently and frequently
 * used go first, Caffeine's W-TinyLFU) or by {@link Builder#maximumBytes}.
 */
public final class NearCacheStore implements IdempotencyStore {

  /** Records kept when no bound is set. */
  public static final long DEFAULT_MAXIMUM_SIZE = 10_000;

  private final IdempotencyStore store;
  private final CompletedRecords records;
  private final OwnClaims ownClaims = new OwnClaims();
  private final boolean learnFromReplays;

  private NearCacheStore(Builder b) {
    this.store = b.store;
    this.records = new CompletedRecords(b.maximumSize, b.maximumBytes);
    this.learnFromReplays = b.learnFromReplays;
  }

  /** A builder of a near cache in front of {@code store}. */
  public static Builder wrap(IdempotencyStore store) {
    return new Builder(Objects.requireNonNull(store, "store"));
  }

  /** Configures a {@link NearCacheStore}. */
  public static final class Builder {
    private final IdempotencyStore store;
    private long maximumSize = -1;
    private long maximumBytes = -1;
    private boolean learnFromReplays = true;

    private Builder(IdempotencyStore store) {
      this.store = store;
    }

    /**
     * Keeps at most {@code records} completed records (default {@value #DEFAULT_MAXIMUM_SIZE}).
     * Not together with {@link #maximumBytes}.
     */
    public Builder maximumSize(long records) {
      if (records <= 0) {
        throw new IllegalArgumentException("maximumSize must be positive, was " + records);
      }
      this.maximumSize = records;
      return this;
    }

    /**
     * Keeps completed records up to roughly {@code bytes} of heap, counting each as its outcome
     * body, its key text and about 340 bytes besides (measured: {@code NearCacheBenchmark}): for
     * outcomes whose size varies widely. Not together with {@link #maximumSize}.
     */
    public Builder maximumBytes(long bytes) {
      if (bytes <= 0) {
        throw new IllegalArgumentException("maximumBytes must be positive, was " + bytes);
      }
      this.maximumBytes = bytes;
      return this;
    }

    /**
     * Whether a Replay the store answers to a {@code claim} is learned, at the cost of one read
     * of the record ({@code find}) the first time this instance sees a replay of the key (default
     * true). Off, only completions made through this store are learned: for a fleet where a key's
     * duplicates rarely reach the same instance twice.
     */
    public Builder learnFromReplays(boolean learn) {
      this.learnFromReplays = learn;
      return this;
    }

    /**
     * The near cache.
     *
     * @throws IllegalStateException if both {@link #maximumSize} and {@link #maximumBytes} are set
     */
    public NearCacheStore build() {
      if (maximumSize > 0 && maximumBytes > 0) {
        throw new IllegalStateException("set maximumSize or maximumBytes, not both");
      }
      if (maximumSize <= 0 && maximumBytes <= 0) {
        maximumSize = DEFAULT_MAXIMUM_SIZE;
      }
      return new NearCacheStore(this);
    }
  }

  /**
   * Answers from memory when a COMPLETED record of the key is known and unexpired at
   * {@code request.now()}; otherwise the store decides.
   */
  @Override
  public Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    Claim cached = claimFromMemory(request);
    if (cached != null) {
      return cached;
    }
    long generation = records.generation();
    Claim claim = store.claim(request);
    learn(request, claim, generation, learnFromReplays);
    return claim;
  }

  /**
   * What {@link #claim} answers from memory, without the store: the replay, or the mismatch, of
   * a completed record it holds; null when it would ask the store.
   */
  @Override
  public Claim claimFromMemory(ClaimRequest request) {
    return records.answer(Objects.requireNonNull(request, "request"));
  }

  /**
   * As {@link #claim}: a replay from memory at once, without touching {@code blocking}; otherwise
   * the store's own {@code claimAsync} (native where the store has one), learned from as
   * {@code claim} learns. The answer may come on the store client's own thread (an event loop),
   * which must not wait for the store: a replay to learn from is read back afterwards, on
   * {@code blocking}, and the claim answered without waiting for it.
   */
  @Override
  public CompletionStage<Claim> claimAsync(ClaimRequest request, Executor blocking) {
    Objects.requireNonNull(request, "request");
    Claim cached = records.answer(request);
    if (cached != null) {
      return CompletableFuture.completedFuture(cached);
    }
    long generation = records.generation();
    return store.claimAsync(request, blocking).thenApply(claim -> {
      if (learnFromReplays && claim instanceof Claim.Replay) {
        try {
          blocking.execute(() -> learn(request, claim, generation, true));
        } catch (RuntimeException refused) {
          // Not learned now: the next replay of the key tries again.
        }
      } else {
        learn(request, claim, generation, false);
      }
      return claim;
    });
  }

  /**
   * Answers the requests it can from memory and sends the rest to the store in one
   * {@code claimAll}, in their order; answers in the request order. Once a request of a key goes
   * to the store, so do that key's later requests in the batch (they must see its claim). When
   * the store's call throws, this throws: the answers from memory acquired nothing, so the caller
   * holds none of the batch's claims, as the SPI requires.
   */
  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests) {
    return claimAll(requests, store::claimAll);
  }

  /** As {@link #claimAll(List)}, the store's {@code claimAll} bounding its wait as asked. */
  @Override
  public List<Claim> claimAll(List<ClaimRequest> requests, Duration lockWait) {
    Objects.requireNonNull(lockWait, "lockWait");
    return claimAll(requests, missed -> store.claimAll(missed, lockWait));
  }

  private List<Claim> claimAll(List<ClaimRequest> requests,
      java.util.function.Function<List<ClaimRequest>, List<Claim>> fromStore) {
    Objects.requireNonNull(requests, "requests");
    Claim[] answers = new Claim[requests.size()];
    List<ClaimRequest> missed = new ArrayList<>();
    int[] missedAt = new int[requests.size()];
    Set<IdempotencyKey> sentToStore = new HashSet<>();
    for (int i = 0; i < answers.length; i++) {
      ClaimRequest r = Objects.requireNonNull(requests.get(i), "request " + i);
      Claim cached = sentToStore.contains(r.key()) ? null : records.answer(r);
      if (cached != null) {
        answers[i] = cached;
      } else {
        sentToStore.add(r.key());
        missedAt[missed.size()] = i;
        missed.add(r);
      }
    }
    if (!missed.isEmpty()) {
      long generation = records.generation();
      List<Claim> decided = fromStore.apply(missed);
      if (decided.size() != missed.size()) {
        throw new IllegalStateException("the store answered " + decided.size() + " claims to "
            + missed.size() + " requests");
      }
      for (int j = 0; j < decided.size(); j++) {
        answers[missedAt[j]] = decided.get(j);
        learn(missed.get(j), decided.get(j), generation, false);
      }
    }
    return new ArrayList<>(Arrays.asList(answers));
  }

  /** Stores the outcome; then, for a claim acquired through this store, keeps the record. */
  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    long generation = completing(key, token, outcome, now, retention);
    try {
      store.complete(key, token, outcome, now, retention);
    } catch (LeaseLostException e) {
      ownClaims.forget(key, token);
      throw e;
    }
    // Any other failure keeps what was registered: a repeat that succeeds learns the earliest.
    learnCompleted(key, token, outcome, now, generation);
  }

  /**
   * As {@link #complete}, through the store's own {@code completeAsync} (native where the store
   * has one): the outcome kept once the store answered that it is stored.
   */
  @Override
  public CompletionStage<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome,
      Instant now, Duration retention, Executor blocking) {
    long generation = completing(key, token, outcome, now, retention);
    return store.completeAsync(key, token, outcome, now, retention, blocking)
        .whenComplete((stored, failure) -> {
          Throwable cause = failure instanceof java.util.concurrent.CompletionException
              && failure.getCause() != null ? failure.getCause() : failure;
          if (cause == null) {
            learnCompleted(key, token, outcome, now, generation);
          } else if (cause instanceof LeaseLostException) {
            ownClaims.forget(key, token);
          }
        });
  }

  /**
   * Before a completion is sent: its arguments checked, the claim registered as completing;
   * returns the cache's generation, for learning the outcome once it is stored.
   */
  private long completing(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    long generation = records.generation();
    ownClaims.completing(key, token, OwnClaims.expiryBound(now, retention));
    return generation;
  }

  /** Stores the outcomes; then keeps the records of those acquired through this store. */
  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention) {
    return completeAll(completions, now, retention,
        () -> store.completeAll(completions, now, retention));
  }

  /** As {@link #completeAll(List, Instant, Duration)}, the store bounding its wait as asked. */
  @Override
  public Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention, Duration lockWait) {
    Objects.requireNonNull(lockWait, "lockWait");
    return completeAll(completions, now, retention,
        () -> store.completeAll(completions, now, retention, lockWait));
  }

  private Set<IdempotencyKey> completeAll(List<Completion> completions, Instant now,
      Duration retention, java.util.function.Supplier<Set<IdempotencyKey>> storeCompleteAll) {
    Completion.checkBatch(completions, store.maxPayloadBytes());
    Objects.requireNonNull(now, "now");
    Objects.requireNonNull(retention, "retention");
    long generation = records.generation();
    Instant bound = OwnClaims.expiryBound(now, retention);
    for (Completion c : completions) {
      ownClaims.completing(c.key(), c.token(), bound);
    }
    Set<IdempotencyKey> lost = storeCompleteAll.get();
    for (Completion c : completions) {
      if (lost.contains(c.key())) {
        ownClaims.forget(c.key(), c.token());
      } else {
        learnCompleted(c.key(), c.token(), c.outcome(), now, generation);
      }
    }
    return lost;
  }

  /** Sends to the store: a FAILED record is never cached. */
  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    try {
      store.fail(key, token, error, now, retention);
    } finally {
      // Whatever the store said, no completion of this claim is learned any more.
      if (key != null) {
        ownClaims.forget(key, token);
      }
    }
  }

  /** Sends to the store: a FAILED record is never cached. */
  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    try {
      store.release(key, token, reason, now, retention);
    } finally {
      if (key != null) {
        ownClaims.forget(key, token);
      }
    }
  }

  /** Sends to the store. */
  @Override
  public Set<IdempotencyKey> extendAll(List<HeldClaim> claims, Instant now, Duration lease) {
    return store.extendAll(claims, now, lease);
  }

  /** Sends to the store. */
  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Instant leaseUntil;
    try {
      leaseUntil = store.extend(key, token, now, lease);
    } catch (LeaseLostException e) {
      ownClaims.forget(key, token);
      throw e;
    }
    ownClaims.extended(key, token, now, leaseUntil);
    return leaseUntil;
  }

  /** Sends to the store. */
  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    store.checkpoint(key, token, checkpoint, now);
  }

  /** The store's record, read from the store (never from memory). */
  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return store.find(key);
  }

  /**
   * Stops answering for every record expiring at or before {@code now} (the purge may delete
   * them), then purges the store.
   */
  @Override
  public int purgeExpired(Instant now, int limit) {
    records.purging(Objects.requireNonNull(now, "now"));
    return store.purgeExpired(now, limit);
  }

  /** Sends to the store: reaping touches IN_PROGRESS records only, none of them cached. */
  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    return store.reapExpiredLeases(now, limit);
  }

  /**
   * The store's suggestion: its batches are what coalesced callers share, and a coalesced claim
   * asks {@link #claimFromMemory} before it queues, so a replay from memory waits for no batch.
   */
  @Override
  public int defaultCoalescing() {
    return store.defaultCoalescing();
  }

  /** The store's limit. */
  @Override
  public int maxPayloadBytes() {
    return store.maxPayloadBytes();
  }

  /**
   * Forgets {@code key}'s cached record: for after its record was deleted or changed outside the
   * SPI. The next claim of the key goes to the store; a store read begun before this call is not
   * cached after it. Affects this instance only.
   */
  public void invalidate(IdempotencyKey key) {
    records.invalidate(Objects.requireNonNull(key, "key"));
  }

  /** Forgets every cached record, as {@link #invalidate} does for one. */
  public void invalidateAll() {
    records.invalidateAll();
  }

  /** How many completed records are held now (expired ones may still count until dropped). */
  public long cachedRecords() {
    return records.size();
  }

  /** Forgets the cache and closes the store. */
  @Override
  public void close() {
    records.invalidateAll();
    ownClaims.clear();
    store.close();
  }

  @Override
  public String toString() {
    return "NearCacheStore[" + store + "]";
  }

  private void learn(ClaimRequest request, Claim claim, long generation, boolean mayRead) {
    if (claim instanceof Claim.Acquired acquired) {
      ownClaims.acquired(request.key(), request.fingerprint(), acquired, request.now());
    } else if (mayRead && claim instanceof Claim.Replay replay) {
      Optional<IdempotencyRecord> found;
      try {
        found = store.find(request.key());
      } catch (RuntimeException unavailable) {
        return; // the answer stands; the next replay tries again
      }
      found.filter(r -> r.status() == Status.COMPLETED && r.token() == replay.token()
              && r.fingerprint().equals(request.fingerprint()))
          .ifPresent(r -> records.learn(request.key(), CompletedRecord.of(r.fingerprint(),
              r.outcome(), r.token(), r.expiresAt()), request.now(), generation));
    }
  }

  private void learnCompleted(IdempotencyKey key, long token, Outcome outcome, Instant now,
      long generation) {
    CompletedRecord record = ownClaims.completed(key, token, outcome);
    if (record != null) {
      records.learn(key, record, now, generation);
    }
  }
}
