package dev.once;

import java.time.Instant;
import java.util.Optional;

/** The running attempt, handed to the logic. Valid only while the logic runs. */
public interface Attempt {

  /** The key being executed. */
  IdempotencyKey idempotencyKey();

  /**
   * A stable key to pass downstream (e.g. as a payment gateway's idempotency key), so that a
   * side effect repeated by a takeover is deduplicated there. The same for every attempt of this
   * key: {@link IdempotencyKey#downstreamKey()}.
   */
  String key();

  /** A stable downstream key for one named step of a multi-step operation. */
  String key(String step);

  /** This attempt's fencing token. */
  long token();

  /**
   * Which run of the work this is, 1 for the first. Claims given back before their work ran (a
   * message released behind another of its ordering group, a consumer stopping) do not count.
   */
  int attemptNumber();

  /** Whether this attempt took over from a worker whose lease passed without an outcome. */
  boolean takeover();

  /** Until when the lease is honoured, as last extended. */
  Instant leaseUntil();

  /**
   * Runs {@code body} as the step {@code name} at most once for this key: an attempt that finds the
   * step's result journaled (by this attempt or an earlier one) gets it back without running it.
   * As {@code step(Step.of(name, codec), body)}. Call steps from the thread running the work, one
   * at a time.
   *
   * @throws X                    what {@code body} threw (journaled first if terminal)
   * @throws StepFailedException  an earlier attempt's run of this step failed terminally
   * @throws LeaseLostException   another worker took over; nothing was journaled
   * @throws IllegalStateException more than {@value #MAX_STEPS} steps
   */
  default <T, X extends Exception> T step(String name, Codec<T> codec, Step.Body<T, X> body)
      throws X {
    return step(Step.of(name, codec), body);
  }

  /** The most steps one key's work may journal. */
  int MAX_STEPS = 64;

  /**
   * Runs {@code body} as {@code step}, at most once for this key, with its reconciler and
   * compensation (see {@link Step}).
   *
   * @throws X                    what {@code body} threw (journaled first if terminal)
   * @throws StepFailedException  an earlier attempt's run of this step failed terminally
   * @throws LeaseLostException   another worker took over; nothing was journaled
   * @throws IllegalStateException more than {@value #MAX_STEPS} steps
   */
  <T, X extends Exception> T step(Step<T> step, Step.Body<T, X> body) throws X;

  /** The last checkpoint written for this key, by this attempt or an earlier one. */
  Optional<Checkpoint> lastCheckpoint();

  /**
   * Writes a recovery point under the fencing token.
   *
   * @throws LeaseLostException if another worker took over
   * @throws PayloadTooLargeException if {@code data} exceeds the payload bound
   */
  void checkpoint(String name, byte[] data);

  /**
   * Extends the lease by the configured lease duration from now.
   *
   * @throws LeaseLostException if another worker took over
   */
  void extendLease();

  /** Whether a heartbeat or write already found the lease lost: stop early, the work is fenced. */
  boolean isLeaseLost();

  /**
   * Confirms, just before a side effect, that this attempt still holds the key. Costs nothing
   * while more than a third of the lease is left (the state is known locally); otherwise it
   * extends the lease in the store, a fenced write, so the effect starts with a full lease ahead.
   * Call it before each effect that {@link #key()} cannot deduplicate downstream.
   *
   * @throws LeaseLostException if a heartbeat or write found the lease lost, or another worker
   *     took over
   * @throws StoreUnavailableException if the lease had to be extended and the store failed
   */
  void ensureLease();
}
