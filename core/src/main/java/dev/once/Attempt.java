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

  /** Which attempt this is, 1 for the first. */
  int attemptNumber();

  /** Whether this attempt took over from a worker whose lease passed without an outcome. */
  boolean takeover();

  /** Until when the lease is honoured, as last extended. */
  Instant leaseUntil();

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
}
