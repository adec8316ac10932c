package dev.once.batch;

import dev.once.IdempotencyKey;
import java.time.Instant;
import java.util.Objects;

/**
 * What became of one message of a batch, and so what its adapter does with it: a
 * {@linkplain Status#isFinal() final} message is acknowledged (deleted, committed); any other is
 * delivered again, not before {@link #retryAt()}.
 *
 * @param index     its position in the list processed
 * @param message   the message
 * @param key       its idempotency key, or null when none could be derived
 * @param status    what happened
 * @param retryAt   for a message that is not final, when to deliver it again; null when final
 * @param failure   what the handler (or the store, for {@link Status#NOT_RUN}) threw, or null
 * @param attempt   which run of the handler this result came from (1 for the first; claims given
 *                  back unrun are not counted), 0 when the handler did not run here
 * @param deadLetterReason for {@link Status#DEAD_LETTERED}, why; else null
 * @param <M>       the message type
 */
public record ItemResult<M>(int index, M message, IdempotencyKey key, Status status,
    Instant retryAt, Throwable failure, int attempt, DeadLetter.Reason deadLetterReason) {

  /** What happened to a message. */
  public enum Status {
    /** The handler ran here and its outcome is stored: acknowledge. */
    HANDLED(true),
    /**
     * A duplicate: the key's outcome was stored before (the handler's success, or its failure
     * that was dead-lettered then): acknowledge, nothing ran.
     */
    REPLAYED(true),
    /**
     * Published to the dead-letter destination ({@link #deadLetterReason()} says why) and, when it
     * has a key, its failure stored: acknowledge.
     */
    DEAD_LETTERED(true),
    /** Another worker holds the key's lease: deliver again after a backoff (never a hot loop). */
    IN_PROGRESS(false),
    /** The handler failed retryably and the claim was released: deliver again after a backoff. */
    RETRY(false),
    /** Another worker took the key over before this one stored the outcome: deliver again. */
    LEASE_LOST(false),
    /**
     * The handler returned but the store did not take its outcome. It is kept in memory with its
     * claim held (and extended) and stored before the message runs again, so a redelivery is a
     * replay: deliver again, do not acknowledge yet.
     */
    OUTCOME_PENDING(false),
    /**
     * Not handled: the batch stopped, an earlier message of its ordering group is not final, its
     * claim could not be made or its lease kept. Its claim, if any, was released: deliver again.
     */
    NOT_RUN(false);

    private final boolean isFinal;

    Status(boolean isFinal) {
      this.isFinal = isFinal;
    }

    /** Whether the message's outcome will never change: acknowledge it. */
    public boolean isFinal() {
      return isFinal;
    }
  }

  public ItemResult {
    Objects.requireNonNull(status, "status");
    if (status.isFinal() != (retryAt == null)) {
      throw new IllegalArgumentException("retryAt must be set exactly for a status that is not"
          + " final: " + status + ", retryAt " + retryAt);
    }
    if ((status == Status.DEAD_LETTERED) != (deadLetterReason != null)) {
      throw new IllegalArgumentException("deadLetterReason must be set exactly for DEAD_LETTERED");
    }
  }

  /** Whether the message is final: acknowledge it. */
  public boolean isFinal() {
    return status.isFinal();
  }
}
