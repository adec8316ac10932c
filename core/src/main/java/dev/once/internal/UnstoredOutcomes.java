package dev.once.internal;

import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.spi.Completion;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Outcomes of handlers that returned but that the store failed to take, by key, each with its
 * claim held (and extended by the heartbeat) until a later try stores it: nothing after a handler
 * returns may make it run again. Shared by the threads of a consumer. Not API.
 */
final class UnstoredOutcomes {

  private static final System.Logger LOG = System.getLogger(BatchEngine.class.getName());

  /** An outcome the store failed to take, kept with its (held) claim until a retry stores it. */
  record Unstored(AttemptImpl attempt, Outcome outcome, long started) {
    IdempotencyKey key() {
      return attempt.idempotencyKey();
    }
  }

  private final Once.Config config;
  private final StoreCalls store;
  private final Leases leases;
  private final Map<IdempotencyKey, Unstored> unstored = new ConcurrentHashMap<>();
  /**
   * One try at a time (the heartbeat and the batches both try). A lock, not a monitor: it is
   * held across a store call, which would pin a virtual thread to its carrier (JDK 21–23).
   */
  private final ReentrantLock storing = new ReentrantLock();

  UnstoredOutcomes(Once.Config config, StoreCalls store, Leases leases) {
    this.config = config;
    this.store = store;
    this.leases = leases;
  }

  /** Keeps the outcome of {@code attempt}, whose storing failed, with its claim held. */
  void keep(AttemptImpl attempt, Outcome outcome, long started) {
    unstored.put(attempt.idempotencyKey(), new Unstored(attempt, outcome, started));
    leases.hold(attempt);
  }

  /** Whether an outcome of {@code key} is kept. */
  boolean keeps(IdempotencyKey key) {
    return unstored.containsKey(key);
  }

  /** Whether {@code attempt}'s own outcome is kept (so its claim stays held). */
  boolean keepsOutcomeOf(AttemptImpl attempt) {
    Unstored kept = unstored.get(attempt.idempotencyKey());
    return kept != null && kept.attempt() == attempt;
  }

  /** Takes the kept outcome of {@code key} away (its old claim no longer held), or null. */
  Unstored take(IdempotencyKey key) {
    Unstored kept = unstored.remove(key);
    if (kept != null) {
      leases.drop(kept.attempt());
    }
    return kept;
  }

  /**
   * Tries again to store the kept outcomes, with one {@code completeAll}; called before each batch
   * and at each heartbeat. Those stored, or refused because another worker took the key over, are
   * forgotten; the others stay kept (and held) for the next try.
   */
  void storeAll() {
    if (unstored.isEmpty()) {
      return;
    }
    storing.lock();
    try {
      List<Unstored> kept = List.copyOf(unstored.values());
      if (kept.isEmpty()) {
        return;
      }
      List<Completion> completions = new ArrayList<>(kept.size());
      for (Unstored u : kept) {
        leases.drop(u.attempt()); // as in storePending: no beat while it is being completed
        completions.add(new Completion(u.key(), u.attempt().token(), u.outcome()));
      }
      Set<IdempotencyKey> lost;
      try {
        lost = store.completeAll(completions, config.clock().instant(), config.retention());
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "still cannot store the outcomes of " + kept.size()
            + " messages; trying again at the next heartbeat or batch", e);
        for (Unstored u : kept) {
          // Atomically with the entry: a thread that removed it (and dropped its claim) between
          // a check and a hold would leave the claim held, and beaten, forever.
          unstored.computeIfPresent(u.key(), (k, current) -> {
            if (current == u) {
              leases.hold(u.attempt());
            }
            return current;
          });
        }
        return;
      }
      for (Unstored u : kept) {
        unstored.remove(u.key(), u);
        if (lost.contains(u.key())) {
          // Taken over after the lease passed (no heartbeat, or a long outage), or stored by the
          // call that failed: either way the key's record now says what happened.
          LOG.log(System.Logger.Level.INFO, "kept outcome of {0} not stored: the record is no"
              + " longer in progress under token {1}", u.key(), u.attempt().token());
        } else {
          long token = u.attempt().token();
          Duration elapsed = Duration.ofNanos(config.ticker().getAsLong() - u.started());
          Execution.notify(config.listener(), l -> l.onCompleted(u.key(), token, elapsed));
        }
      }
    } finally {
      storing.unlock();
    }
  }
}
