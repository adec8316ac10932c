package dev.once.kafka;

/**
 * Names of the headers a dead-letter record carries in addition to the original record's headers.
 * Values are UTF-8 text; numbers are decimal. The dead-letter record keeps the original record's
 * key and value.
 */
public final class DeadLetterHeaders {

  private DeadLetterHeaders() {}

  /** Topic of the original record. */
  public static final String ORIGINAL_TOPIC = "once-dlt-original-topic";
  /** Partition of the original record. */
  public static final String ORIGINAL_PARTITION = "once-dlt-original-partition";
  /** Offset of the original record. */
  public static final String ORIGINAL_OFFSET = "once-dlt-original-offset";
  /** Timestamp of the original record, epoch milliseconds. */
  public static final String ORIGINAL_TIMESTAMP = "once-dlt-original-timestamp";
  /** The idempotency key (absent when none derived): a dead-letter consumer deduplicates by it. */
  public static final String IDEMPOTENCY_KEY = "once-dlt-idempotency-key";
  /** A {@link dev.once.batch.DeadLetter.Reason} name. */
  public static final String REASON = "once-dlt-reason";
  /** Class name of the failure. */
  public static final String EXCEPTION_CLASS = "once-dlt-exception-class";
  /** Message of the failure, "" if none. */
  public static final String EXCEPTION_MESSAGE = "once-dlt-exception-message";
  /** How many times the handler ran. */
  public static final String ATTEMPTS = "once-dlt-attempts";
}
