package dev.once.nearcache.internal;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import java.time.Instant;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The COMPLETED records this instance knows, each until its own expiry, answering claims as the
 * store would.
 *
 * <p>Correctness never rests on Caffeine's clock: every answer compares the request's own
 * {@code now} with the record's {@code expiresAt}, exactly as {@link
 * dev.once.spi.ClaimRules#decide} does. Caffeine's expiry (in the callers' time, {@link
 * CallerTime}) and its size bound only free memory.
 *
 * <p>Two guards keep the cache from answering for a record the store may no longer hold:
 *
 * <ul>
 *   <li>a purge horizon: after {@code purgeExpired(now)} every entry expiring at or before that
 *       {@code now} is treated as gone (the purge may have deleted it), without scanning the cache;
 *   <li>a generation, bumped by every invalidation: a record read from the store before an
 *       invalidation is never kept after it (checked again after it is put, so an invalidation
 *       racing with a put wins).
 * </ul>
 */
public final class CompletedRecords {

  private static final Claim MISMATCH = new Claim.Mismatch();

  private final CallerTime time = new CallerTime();
  private final Cache<IdempotencyKey, CompletedRecord> cache;
  private final AtomicLong generation = new AtomicLong();
  private final AtomicReference<Instant> purgedThrough = new AtomicReference<>(Instant.MIN);

  /**
   * A cache bounded by {@code maximumSize} entries, or, when {@code maximumBytes} is positive, by
   * roughly that many bytes of entries.
   */
  public CompletedRecords(long maximumSize, long maximumBytes) {
    Caffeine<IdempotencyKey, CompletedRecord> builder = Caffeine.newBuilder()
        // Maintenance (eviction, expiry) runs on the calling threads: no pool threads of our own.
        .executor(Runnable::run)
        .ticker(time)
        .expireAfter(new UntilExpiry());
    if (maximumBytes > 0) {
      builder.maximumWeight(maximumBytes)
          .weigher((IdempotencyKey k, CompletedRecord r) -> r.weight(k));
    } else {
      builder.maximumSize(maximumSize);
    }
    this.cache = builder.build();
  }

  /**
   * The store's answer to {@code request} from memory: Replay or Mismatch when a record
   * COMPLETED and unexpired at {@code request.now()} is known; null when the store must decide.
   */
  public Claim answer(ClaimRequest request) {
    time.saw(request.now());
    CompletedRecord r = cache.getIfPresent(request.key());
    if (r == null) {
      return null;
    }
    if (!r.isLiveAt(request.now()) || mayHaveBeenPurged(r)) {
      // Expired for this caller (the key behaves as new): the store decides from now on.
      cache.asMap().remove(request.key(), r);
      return null;
    }
    return r.fingerprint().equals(request.fingerprint()) ? r.replay() : MISMATCH;
  }

  /** The current generation; read it before the store call whose answer is learned. */
  public long generation() {
    return generation.get();
  }

  /**
   * Keeps {@code record}, learned at {@code now} from a store answer obtained after
   * {@code generationBefore} was read. Of two records for one key the one expiring later wins: a later record of a key is
   * always created after the earlier one expired, so it expires later.
   */
  public void learn(IdempotencyKey key, CompletedRecord record, Instant now,
      long generationBefore) {
    time.saw(now);
    if (!record.isLiveAt(now) || mayHaveBeenPurged(record)
        || generation.get() != generationBefore) {
      return;
    }
    ConcurrentMap<IdempotencyKey, CompletedRecord> map = cache.asMap();
    CompletedRecord old = map.get(key);
    if (old != null && !record.expiresAt().isAfter(old.expiresAt())) {
      return;
    }
    // Put only over what was read; losing a race to another put just leaves that one.
    boolean put = old == null ? map.putIfAbsent(key, record) == null
        : map.replace(key, old, record);
    if (put && generation.get() != generationBefore) {
      map.remove(key, record);
    }
  }

  /** Forgets {@code key}; no store read begun before this call is learned after it. */
  public void invalidate(IdempotencyKey key) {
    generation.incrementAndGet();
    cache.invalidate(key);
  }

  /** Forgets everything; no store read begun before this call is learned after it. */
  public void invalidateAll() {
    generation.incrementAndGet();
    cache.invalidateAll();
  }

  /** Records expiring at or before {@code now} may be deleted from now on: stop answering for them. */
  public void purging(Instant now) {
    time.saw(now);
    purgedThrough.accumulateAndGet(now, (a, b) -> a.isAfter(b) ? a : b);
  }

  /** How many records are held (an estimate: expired entries may not be dropped yet). */
  public long size() {
    cache.cleanUp();
    return cache.estimatedSize();
  }

  private boolean mayHaveBeenPurged(CompletedRecord r) {
    return !r.expiresAt().isAfter(purgedThrough.get());
  }

  /** Caffeine drops an entry once the callers' time ({@link CallerTime}) reaches its expiry. */
  private static final class UntilExpiry implements Expiry<IdempotencyKey, CompletedRecord> {
    @Override
    public long expireAfterCreate(IdempotencyKey key, CompletedRecord value, long currentTime) {
      return Math.max(0, CallerTime.nanosOf(value.expiresAt()) - currentTime);
    }

    @Override
    public long expireAfterUpdate(IdempotencyKey key, CompletedRecord value, long currentTime,
        long currentDuration) {
      return expireAfterCreate(key, value, currentTime);
    }

    @Override
    public long expireAfterRead(IdempotencyKey key, CompletedRecord value, long currentTime,
        long currentDuration) {
      return currentDuration;
    }
  }
}
