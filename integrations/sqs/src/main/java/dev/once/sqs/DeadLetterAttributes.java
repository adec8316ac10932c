package dev.once.sqs;

/**
 * Names of the message attributes a dead-letter message carries, before the original message's
 * own attributes (SQS allows 10 attributes per message: these 6 first, then the original ones
 * while room is left, the key attribute first). The dead-letter message keeps the original body.
 * Values are {@code String} attributes, except {@link #ATTEMPTS}, a {@code Number}.
 */
public final class DeadLetterAttributes {

  private DeadLetterAttributes() {}

  /** A {@link dev.once.batch.DeadLetter.Reason} name. */
  public static final String REASON = "once-dlq-reason";
  /** Class name of the failure (for a missing or reused key, the library's own description). */
  public static final String EXCEPTION_CLASS = "once-dlq-exception-class";
  /** Message of the failure, at most 4096 characters; absent when it has none. */
  public static final String EXCEPTION_MESSAGE = "once-dlq-exception-message";
  /** The idempotency key (absent when none was derived): a dead-letter consumer dedups by it. */
  public static final String IDEMPOTENCY_KEY = "once-dlq-idempotency-key";
  /** The SQS message id of the original message. */
  public static final String ORIGINAL_MESSAGE_ID = "once-dlq-original-message-id";
  /** How many times the handler ran (0 when it never ran). */
  public static final String ATTEMPTS = "once-dlq-attempts";
}
