package dev.once;

import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * A store in this JVM's memory. Thread-safe: each key is decided atomically by
 * {@link ConcurrentHashMap#compute}. Honours every rule of the SPI, so it serves production
 * services that run as a single instance and accept losing records on restart, and users' tests.
 * Schedule {@link Maintenance} so expired records do not accumulate.
 */
public final class InMemoryStore implements IdempotencyStore {

  private final ConcurrentHashMap<IdempotencyKey, IdempotencyRecord> records =
      new ConcurrentHashMap<>();

  @Override
  public Claim claim(ClaimRequest request) {
    Objects.requireNonNull(request, "request");
    // Answers that change nothing (replay, mismatch, live lease) are read without locking the
    // key: records are immutable, so the read is a consistent snapshot and duplicates scale.
    Claim unchanged = readOnlyAnswer(records.get(request.key()), request);
    if (unchanged != null) {
      return unchanged;
    }
    Claim[] answer = new Claim[1];
    records.compute(request.key(), (key, current) -> {
      ClaimRules.Decision decision = ClaimRules.decide(current, request);
      answer[0] = decision.claim();
      return decision.next() == null ? current : decision.next();
    });
    return answer[0];
  }

  private static Claim readOnlyAnswer(IdempotencyRecord current, ClaimRequest request) {
    if (current == null || current.isExpired(request.now())) {
      return null;
    }
    if (!current.fingerprint().equals(request.fingerprint())) {
      return new Claim.Mismatch();
    }
    if (current.status() == Status.COMPLETED) {
      return new Claim.Replay(current.outcome(), current.token());
    }
    if (ClaimRules.isOwnLiveClaim(current, request)) {
      return ClaimRules.resentAnswer(current);
    }
    if (current.isLeaseLive(request.now())) {
      return new Claim.InProgress(current.leaseUntil());
    }
    return null;
  }

  @Override
  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    Objects.requireNonNull(outcome, "outcome");
    Instant expiresAt = now.plus(retention);
    update(key, token, r -> r.isCompletedAs(token, outcome),
        r -> new IdempotencyRecord(r.key(), Status.COMPLETED, r.fingerprint(),
            r.token(), r.leaseUntil(), r.attempts(), r.checkpoint(), outcome, r.lastError(),
            r.createdAt(), now, expiresAt, r.claimId()));
  }

  @Override
  public void fail(IdempotencyKey key, long token, String error, Instant now, Duration retention) {
    Objects.requireNonNull(error, "error");
    update(key, token, r -> r.isFailedAs(token, error),
        r -> ClaimRules.failed(r, error, now, retention));
  }

  @Override
  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    Objects.requireNonNull(reason, "reason");
    update(key, token, r -> r.isFailedAs(token, reason),
        r -> ClaimRules.released(r, reason, now, retention));
  }

  @Override
  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    Instant leaseUntil = now.plus(lease);
    update(key, token, r -> false, r -> new IdempotencyRecord(r.key(), r.status(),
        r.fingerprint(), r.token(), leaseUntil, r.attempts(), r.checkpoint(), r.outcome(),
        r.lastError(), r.createdAt(), now, later(r.expiresAt(), leaseUntil), r.claimId()));
    return leaseUntil;
  }

  @Override
  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint,
      Instant now) {
    Objects.requireNonNull(checkpoint, "checkpoint");
    update(key, token, r -> false, r -> new IdempotencyRecord(r.key(), r.status(),
        r.fingerprint(), r.token(), r.leaseUntil(), r.attempts(), checkpoint, r.outcome(),
        r.lastError(), r.createdAt(), now, r.expiresAt(), r.claimId()));
  }

  @Override
  public Optional<IdempotencyRecord> find(IdempotencyKey key) {
    return Optional.ofNullable(records.get(Objects.requireNonNull(key, "key")));
  }

  @Override
  public int purgeExpired(Instant now, int limit) {
    int purged = 0;
    for (Map.Entry<IdempotencyKey, IdempotencyRecord> e : records.entrySet()) {
      if (purged >= limit) {
        break;
      }
      // remove(key, value) deletes only the record we looked at, not one a claim just replaced.
      if (e.getValue().isExpired(now) && records.remove(e.getKey(), e.getValue())) {
        purged++;
      }
    }
    return purged;
  }

  @Override
  public int reapExpiredLeases(Instant now, int limit) {
    int reaped = 0;
    for (Map.Entry<IdempotencyKey, IdempotencyRecord> e : records.entrySet()) {
      if (reaped >= limit) {
        break;
      }
      IdempotencyRecord r = e.getValue();
      IdempotencyRecord reapedRecord = ClaimRules.reaped(r, now);
      if (reapedRecord != null && records.replace(e.getKey(), r, reapedRecord)) {
        reaped++;
      }
    }
    return reaped;
  }

  /** How many records are held, expired or not. */
  public int size() {
    return records.size();
  }

  /** Forgets every record. For tests. */
  public void clear() {
    records.clear();
  }

  /**
   * Applies {@code change} to the record IN_PROGRESS under {@code token}; leaves a record that
   * {@code alreadyDone} says this write already made (a re-sent write) as it is; else refuses.
   */
  private void update(IdempotencyKey key, long token, Predicate<IdempotencyRecord> alreadyDone,
      UnaryOperator<IdempotencyRecord> change) {
    Objects.requireNonNull(key, "key");
    records.compute(key, (k, current) -> {
      if (current != null && current.status() == Status.IN_PROGRESS && current.token() == token) {
        return change.apply(current);
      }
      if (current != null && alreadyDone.test(current)) {
        return current;
      }
      throw new LeaseLostException(key, token);
    });
  }

  private static Instant later(Instant a, Instant b) {
    return a.isAfter(b) ? a : b;
  }
}
