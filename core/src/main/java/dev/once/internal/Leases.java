package dev.once.internal;

import dev.once.Once;
import dev.once.Scheduler;
import java.time.Duration;
import dev.once.IdempotencyKey;
import dev.once.spi.EpochMicros;
import dev.once.spi.HeldClaim;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The claims a {@link BatchEngine} holds (acquired, and neither stored nor released), how it
 * gives them back ({@link #release} unrun, {@link #fail} after a failure), and the
 * one heartbeat that keeps all of them alive: every third of the lease it extends all of them
 * with one {@code extendAll} (one round trip where the store can: a beat over a poll batch of 500
 * records must not outlast the lease), and tells each attempt what became of it (which logs and
 * tells the listener about a failed beat or a lost lease). A claim is held from the batch claim on, so a record waiting its turn in
 * a slow batch keeps its lease as well as the one being handled. Without a heartbeat scheduler in
 * the {@code Once} there is no beat; the engine then checks each lease just before its handler
 * runs ({@link AttemptImpl#ensureLease()}). Not API.
 */
final class Leases {

  private static final System.Logger LOG = System.getLogger(BatchEngine.class.getName());

  private final Scheduler scheduler;
  private final Duration period;
  /** Runs first at every beat (the engine retries the outcomes it could not store). */
  private final Runnable beforeBeat;
  private final Set<AttemptImpl> held = ConcurrentHashMap.newKeySet();
  /** Held by a beat while it extends: {@link #drop} waits for a beat in flight. */
  private final ReentrantLock beating = new ReentrantLock();
  private final Once.Config config;
  private final StoreCalls store;
  /** The heartbeat: runs while anything is held, ends at the first beat after. Guarded by this. */
  private Scheduler.Task beat;

  Leases(Once.Config config, StoreCalls store, Runnable beforeBeat) {
    this.config = config;
    this.store = store;
    this.scheduler = config.heartbeat();
    Duration third = config.lease().dividedBy(3);
    this.period = third.isZero() ? Duration.ofMillis(1) : third;
    this.beforeBeat = beforeBeat;
  }

  /** Keeps {@code attempt}'s lease alive until it is {@linkplain #drop dropped}. */
  void hold(AttemptImpl attempt) {
    held.add(attempt);
    if (scheduler != null) {
      synchronized (this) {
        if (beat == null) {
          beat = scheduler.scheduleAtFixedRate(this::beat, period);
        }
      }
    }
  }

  /**
   * Stops extending {@code attempt}'s lease; once this returns no beat touches it, so the caller
   * may complete or release the claim without a beat extending it behind its back (which would
   * find the record no longer in progress and report a lost lease). Dropping twice is harmless.
   */
  void drop(AttemptImpl attempt) {
    beating.lock(); // waits for a beat in flight (see beat)
    try {
      held.remove(attempt);
    } finally {
      beating.unlock();
    }
  }

  private void beat() {
    beforeBeat.run();
    beating.lock();
    try {
      List<AttemptImpl> attempts = new ArrayList<>(held.size());
      List<HeldClaim> claims = new ArrayList<>(held.size());
      for (AttemptImpl attempt : held) {
        if (!attempt.isLeaseLost()) {
          attempts.add(attempt);
          claims.add(new HeldClaim(attempt.idempotencyKey(), attempt.token()));
        }
      }
      if (!claims.isEmpty()) {
        extend(attempts, claims);
      }
    } finally {
      beating.unlock();
    }
    // Nothing left to keep alive: the beat ends (the next hold starts another). Ending it here
    // rather than in drop spares a cancel and a new schedule for each batch.
    synchronized (this) {
      if (beat != null && held.isEmpty()) {
        beat.cancel();
        beat = null;
      }
    }
  }

  private void extend(List<AttemptImpl> attempts, List<HeldClaim> claims) {
    Instant now = config.clock().instant();
    Set<IdempotencyKey> lost;
    try {
      lost = store.extendAll(claims, now, config.storedLease());
    } catch (RuntimeException e) {
      attempts.forEach(a -> a.beatFailed(e));
      return;
    }
    // At the stores' precision (microseconds), never later than what they wrote.
    Instant until = EpochMicros.floor(now).plus(EpochMicros.floor(config.storedLease()));
    for (AttemptImpl attempt : attempts) {
      if (lost.contains(attempt.idempotencyKey())) {
        attempt.lostByBeat();
      } else {
        attempt.extendedTo(until);
      }
    }
  }

  /**
   * Stops holding a claim whose handler never ran and gives it back (FAILED, the attempt not
   * counted), so the next delivery retakes it at once with the same attempt number.
   */
  void release(AttemptImpl attempt, String why) {
    drop(attempt);
    store.releaseOrLeave(attempt.idempotencyKey(), attempt.token(), why,
        config.clock().instant(), config.retention());
  }

  /**
   * Stops holding a claim whose handler failed and records the failure (FAILED, retryable, the
   * attempt counted), so the next delivery retakes it at once.
   */
  void fail(AttemptImpl attempt, String why) {
    drop(attempt);
    try {
      store.fail(attempt.idempotencyKey(), attempt.token(), why, config.clock().instant(),
          config.retention());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not record the failure of "
          + attempt.idempotencyKey(), e);
    }
  }
}
