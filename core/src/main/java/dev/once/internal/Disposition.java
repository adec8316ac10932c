package dev.once.internal;

import dev.once.IdempotencyKey;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult.Status;
import java.time.Instant;

/**
 * What became of one message of a batch: final, or to be delivered again from {@code retryAt};
 * or, while the batch runs, awaiting the batch's completion of {@code awaiting} to become
 * {@code status}. Not API.
 */
record Disposition(Status status, Instant retryAt, IdempotencyKey awaiting,
    DeadLetter.Reason reason, Throwable failure, int attempt) {

  static Disposition done(Status status, int attempt) {
    return new Disposition(status, null, null, null, null, attempt);
  }

  static Disposition notFinal(Status status, Instant retryAt, Throwable failure, int attempt) {
    return new Disposition(status, retryAt, null, null, failure, attempt);
  }

  static Disposition awaiting(IdempotencyKey key, Status status) {
    return new Disposition(status, null, key, null, null, 0);
  }

  static Disposition deadLettered(DeadLetter.Reason reason, Throwable failure, int attempt) {
    return new Disposition(Status.DEAD_LETTERED, null, null, reason, failure, attempt);
  }
}
