package dev.once.internal;

import dev.once.Once;
import dev.once.Scheduler;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The claims a {@link BatchEngine} holds (acquired, and neither stored nor released) and the
 * one heartbeat that keeps all of them alive: every third of the lease it extends each of them,
 * through {@link AttemptImpl#heartbeat()} (which logs and tells the listener about a failed
 * beat or a lost lease). A claim is held from the batch claim on, so a record waiting its turn in
 * a slow batch keeps its lease as well as the one being handled. Without a heartbeat scheduler in
 * the {@code Once} there is no beat; the engine then checks each lease just before its handler
 * runs ({@link AttemptImpl#ensureLease()}). Not API.
 */
final class Leases {

  private final Scheduler scheduler;
  private final Duration period;
  /** Runs first at every beat (the engine retries the outcomes it could not store). */
  private final Runnable beforeBeat;
  private final Set<AttemptImpl> held = ConcurrentHashMap.newKeySet();
  /** The heartbeat: runs while anything is held, ends at the first beat after. Guarded by this. */
  private Scheduler.Task beat;

  Leases(Once.Config config, Runnable beforeBeat) {
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
    synchronized (attempt) { // waits for a beat of this attempt in flight (see beat)
      held.remove(attempt);
    }
  }

  private void beat() {
    beforeBeat.run();
    for (AttemptImpl attempt : held) {
      synchronized (attempt) {
        if (held.contains(attempt)) {
          attempt.heartbeat();
        }
      }
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
}
