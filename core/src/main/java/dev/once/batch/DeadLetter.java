package dev.once.batch;

import java.util.Objects;

/**
 * A message given up on, and why: what an adapter publishes to its dead-letter destination (with
 * these fields as headers or attributes, next to the message's own).
 *
 * @param message        the original message
 * @param reason         why it is dead-lettered
 * @param key            its idempotency key, or null when none was derived
 * @param exceptionClass the class name of the failure (for {@link Reason#NO_KEY} and
 *                       {@link Reason#KEY_REUSED}, the library's own description of the cause)
 * @param exceptionMessage the failure's message, "" if none
 * @param attempts       how many times the handler ran (0 when it never ran)
 * @param <M>            the message type
 */
public record DeadLetter<M>(M message, Reason reason, dev.once.IdempotencyKey key,
    String exceptionClass, String exceptionMessage, int attempts) {

  /** Why a message is dead-lettered. */
  public enum Reason {
    /** The handler failed terminally (by the {@link dev.once.FailurePolicy}); the failure is stored. */
    TERMINAL_FAILURE,
    /** The handler failed retryably {@link BatchConfig#maxAttempts} times. */
    RETRIES_EXHAUSTED,
    /** No idempotency key could be derived ({@link NoKeyPolicy#DEAD_LETTER}). */
    NO_KEY,
    /** The key was used before with another payload (another fingerprint). */
    KEY_REUSED,
    /**
     * The handler failed terminally (or ran out of retries) and undoing its steps kept failing
     * ({@link dev.once.Once.Builder#compensationAttempts}): the failure is stored naming the
     * steps left uncompensated, which need a person.
     */
    COMPENSATION_FAILED
  }

  public DeadLetter {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(exceptionClass, "exceptionClass");
    exceptionMessage = exceptionMessage == null ? "" : exceptionMessage;
  }
}
