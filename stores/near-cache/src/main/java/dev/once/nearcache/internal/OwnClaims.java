package dev.once.nearcache.internal;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.EpochMicros;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.ConcurrentMap;

/**
 * The claims acquired through this instance and not finished yet: what a completion through it
 * needs to become a cached record. {@code complete(key, token, outcome, now, retention)} carries
 * neither the record's fingerprint (taken from the claim that was answered Acquired with that
 * token) nor a reliable expiry:
 *
 * <p>A store acknowledges a completion repeated after it was applied without changing the record,
 * and the repeat usually carries a later {@code now} (Once repeats a completion whose answer was
 * lost with a fresh clock reading): {@code now + retention} of the call that returned may be later
 * than the record's expiry. So every completion registers the lower bound of the expiry it would
 * write before it is sent, and a record is learned with the earliest bound registered for its
 * token. The completion that the store applied registered before it was sent, so before any call
 * returned success: the learned expiry is never later than the stored one. A claim whose
 * completions did not all go through this instance is simply not learned here (its entry is
 * missing or forgotten).
 *
 * <p>Bounded ({@value #MAXIMUM} claims) and dropped a while after the lease ends, so abandoned
 * claims (a crashed handler, a lost lease) cannot pile up; a claim dropped early is only a record
 * not learned.
 */
public final class OwnClaims {

  static final int MAXIMUM = 65_536;
  /** How long after its lease a claim is kept, for a completion that comes late. */
  private static final Duration GRACE = Duration.ofMinutes(5);

  /** One claim held through this instance; {@code earliestExpiry} null until a completion is sent. */
  private record Held(long token, Fingerprint fingerprint, Instant earliestExpiry,
      long lifetimeNanos) {

    Held registering(Instant expiryBound) {
      if (earliestExpiry != null && !expiryBound.isBefore(earliestExpiry)) {
        return this;
      }
      return new Held(token, fingerprint, expiryBound, lifetimeNanos);
    }
  }

  private final Cache<IdempotencyKey, Held> held = Caffeine.newBuilder()
      .executor(Runnable::run)
      .maximumSize(MAXIMUM)
      .expireAfter(new Expiry<IdempotencyKey, Held>() {
        @Override
        public long expireAfterCreate(IdempotencyKey key, Held value, long currentTime) {
          return value.lifetimeNanos();
        }

        @Override
        public long expireAfterUpdate(IdempotencyKey key, Held value, long currentTime,
            long currentDuration) {
          return value.lifetimeNanos();
        }

        @Override
        public long expireAfterRead(IdempotencyKey key, Held value, long currentTime,
            long currentDuration) {
          return currentDuration;
        }
      })
      .build();

  /**
   * The lower bound of the expiry {@code complete(…, now, retention)} writes, whatever precision
   * the store keeps time in: microseconds floored (the coarsest the SPI allows) of {@code now},
   * plus the retention floored to microseconds. Every store's {@code now + retention} (exact,
   * floored as a sum, or floored per part) is at or after it. Null when out of range.
   */
  public static Instant expiryBound(Instant now, Duration retention) {
    try {
      return EpochMicros.floor(now).plus(retention.truncatedTo(ChronoUnit.MICROS));
    } catch (java.time.DateTimeException | ArithmeticException outOfRange) {
      return null;
    }
  }

  /** A claim of {@code key} with {@code fingerprint} was answered {@code acquired} at {@code now}. */
  public void acquired(IdempotencyKey key, Fingerprint fingerprint, Claim.Acquired acquired,
      Instant now) {
    long lifetime = lifetime(now, acquired.leaseUntil());
    // A re-sent claim answered with the same token keeps what its completions registered.
    held.asMap().compute(key, (k, old) -> old != null && old.token() == acquired.token()
        ? new Held(old.token(), old.fingerprint(), old.earliestExpiry(), lifetime)
        : new Held(acquired.token(), fingerprint, null, lifetime));
  }

  /** The lease of {@code key}'s claim under {@code token} now ends at {@code leaseUntil}. */
  public void extended(IdempotencyKey key, long token, Instant now, Instant leaseUntil) {
    ConcurrentMap<IdempotencyKey, Held> map = held.asMap();
    Held h = map.get(key);
    if (h != null && h.token() == token) {
      map.replace(key, h, new Held(h.token(), h.fingerprint(), h.earliestExpiry(),
          lifetime(now, leaseUntil)));
    }
  }

  /**
   * A completion under {@code token} that would write an expiry no earlier than {@code expiryBound}
   * is about to be sent. Call it before sending.
   */
  public void completing(IdempotencyKey key, long token, Instant expiryBound) {
    ConcurrentMap<IdempotencyKey, Held> map = held.asMap();
    while (true) {
      Held h = map.get(key);
      if (h == null || h.token() != token) {
        return;
      }
      if (expiryBound == null) {
        // An expiry we cannot bound: this claim is not learned.
        if (map.remove(key, h)) {
          return;
        }
        continue;
      }
      Held next = h.registering(expiryBound);
      if (next == h || map.replace(key, h, next)) {
        return;
      }
    }
  }

  /**
   * A completion under {@code token} with {@code outcome} was stored (applied now or before):
   * the COMPLETED record, if the claim was held here; the claim is forgotten. Null when it was
   * not held here.
   */
  public CompletedRecord completed(IdempotencyKey key, long token, Outcome outcome) {
    ConcurrentMap<IdempotencyKey, Held> map = held.asMap();
    while (true) {
      Held h = map.get(key);
      if (h == null || h.token() != token || h.earliestExpiry() == null) {
        return null;
      }
      if (map.remove(key, h)) {
        return CompletedRecord.of(h.fingerprint(), outcome, token, h.earliestExpiry());
      }
    }
  }

  /** The claim of {@code key} under {@code token} is over without a record to learn. */
  public void forget(IdempotencyKey key, long token) {
    ConcurrentMap<IdempotencyKey, Held> map = held.asMap();
    while (true) {
      Held h = map.get(key);
      if (h == null || h.token() != token || map.remove(key, h)) {
        return;
      }
    }
  }

  /** Forgets every claim. */
  public void clear() {
    held.invalidateAll();
  }

  private static long lifetime(Instant now, Instant leaseUntil) {
    try {
      Duration lease = Duration.between(now, leaseUntil);
      return (lease.isNegative() ? Duration.ZERO : lease).plus(GRACE).toNanos();
    } catch (ArithmeticException longerThan292Years) {
      return Long.MAX_VALUE;
    }
  }
}
