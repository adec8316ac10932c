package dev.once.nats;

/**
 * Names of the headers a dead letter carries in addition to the original message's own headers
 * (those whose names begin with {@code Nats-}, which JetStream interprets, are left out: see
 * {@link #ORIGINAL_MSG_ID}). The dead letter keeps the original payload. Values are printable
 * ASCII: other characters, and {@code %}, are written as {@code %XX} of their UTF-8 bytes (NATS
 * header values allow no line breaks or non-ASCII bytes); numbers are decimal.
 */
public final class DeadLetterHeaders {

  private DeadLetterHeaders() {}

  /** Subject the original message was published to. */
  public static final String ORIGINAL_SUBJECT = "Once-DLQ-Original-Subject";
  /** Stream the original message was stored in. */
  public static final String ORIGINAL_STREAM = "Once-DLQ-Original-Stream";
  /** The durable consumer that gave the message up. */
  public static final String ORIGINAL_CONSUMER = "Once-DLQ-Original-Consumer";
  /** Stream sequence of the original message. */
  public static final String STREAM_SEQUENCE = "Once-DLQ-Stream-Sequence";
  /** The original message's {@code Nats-Msg-Id}, when it had one. */
  public static final String ORIGINAL_MSG_ID = "Once-DLQ-Original-Msg-Id";
  /** The idempotency key (absent when none derived): a dead-letter consumer deduplicates by it. */
  public static final String IDEMPOTENCY_KEY = "Once-DLQ-Idempotency-Key";
  /** A {@link dev.once.batch.DeadLetter.Reason} name. */
  public static final String REASON = "Once-DLQ-Reason";
  /** Class name of the failure. */
  public static final String EXCEPTION_CLASS = "Once-DLQ-Exception-Class";
  /** Message of the failure, "" if none (at most 1,000 characters before encoding). */
  public static final String EXCEPTION_MESSAGE = "Once-DLQ-Exception-Message";
  /** How many times the handler ran (0 when it never ran). */
  public static final String ATTEMPTS = "Once-DLQ-Attempts";
}
