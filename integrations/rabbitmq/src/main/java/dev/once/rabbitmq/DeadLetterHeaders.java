package dev.once.rabbitmq;

/**
 * Names of the headers a dead letter carries in addition to the original message's own headers.
 * The dead letter keeps the original body and properties (message id, content type, correlation
 * id, …), and is always persistent. Values are text, except {@link #ATTEMPTS} (an integer).
 * A header whose value is unknown (no idempotency key, no message id) is absent.
 */
public final class DeadLetterHeaders {

  private DeadLetterHeaders() {}

  /** The exchange the original message was published to ("" for the default exchange). */
  public static final String ORIGINAL_EXCHANGE = "x-once-original-exchange";
  /** The routing key the original message was published with. */
  public static final String ORIGINAL_ROUTING_KEY = "x-once-original-routing-key";
  /** The queue the original message was consumed from. */
  public static final String ORIGINAL_QUEUE = "x-once-original-queue";
  /** The original message's {@code message-id} property. */
  public static final String MESSAGE_ID = "x-once-message-id";
  /** The idempotency key: a dead-letter consumer deduplicates by it. */
  public static final String IDEMPOTENCY_KEY = "x-once-idempotency-key";
  /**
   * Why it was given up on: {@code TERMINAL_FAILURE}, {@code RETRIES_EXHAUSTED}, {@code NO_KEY} or
   * {@code KEY_REUSED} (a {@link dev.once.batch.DeadLetter.Reason} name).
   */
  public static final String REASON = "x-once-reason";
  /** The class name of the failure. */
  public static final String EXCEPTION_CLASS = "x-once-exception-class";
  /** The failure's message ("" if none), cut to 4,000 characters. */
  public static final String EXCEPTION_MESSAGE = "x-once-exception-message";
  /** How many times the handler ran (0 when it never did), an integer. */
  public static final String ATTEMPTS = "x-once-attempts";
}
