package dev.once.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * A record given up on, and why.
 *
 * @param record         the original record
 * @param reason         why it is dead-lettered
 * @param idempotencyKey its idempotency key, or null when none derived
 * @param exceptionClass the class name of the failure (for {@link Reason#NO_KEY} and
 *                       {@link Reason#KEY_REUSED}, the library's own description of the cause)
 * @param message        the failure's message, "" if none
 * @param attempts       how many times the handler ran (0 when it never ran)
 * @param <K>            the record key type
 * @param <V>            the record value type
 */
public record DeadLetter<K, V>(ConsumerRecord<K, V> record, Reason reason, String idempotencyKey,
    String exceptionClass, String message, int attempts) {

  /** Why a record went to the dead-letter topic. */
  public enum Reason {
    /** The handler failed terminally (by the {@link dev.once.FailurePolicy}); the failure is stored. */
    TERMINAL_FAILURE,
    /** The handler failed retryably {@link IdempotentConsumer.Builder#maxAttempts} times. */
    RETRIES_EXHAUSTED,
    /** No idempotency key could be derived ({@link NoKeyPolicy#DEAD_LETTER}). */
    NO_KEY,
    /** The key was used before with another payload (another fingerprint). */
    KEY_REUSED,
    /**
     * The handler failed for good and undoing its steps kept failing
     * ({@link dev.once.Once.Builder#compensationAttempts}): the failure is stored naming the
     * steps left uncompensated.
     */
    COMPENSATION_FAILED
  }

  public DeadLetter {
    Objects.requireNonNull(record, "record");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(exceptionClass, "exceptionClass");
    message = message == null ? "" : message;
  }

  /**
   * The headers of the dead-letter record: the original record's headers followed by the
   * {@link DeadLetterHeaders} (UTF-8 text; numbers in decimal).
   */
  public Headers headers() {
    RecordHeaders headers = new RecordHeaders();
    for (Header h : record.headers()) {
      headers.add(h);
    }
    add(headers, DeadLetterHeaders.ORIGINAL_TOPIC, record.topic());
    add(headers, DeadLetterHeaders.ORIGINAL_PARTITION, Integer.toString(record.partition()));
    add(headers, DeadLetterHeaders.ORIGINAL_OFFSET, Long.toString(record.offset()));
    add(headers, DeadLetterHeaders.ORIGINAL_TIMESTAMP, Long.toString(record.timestamp()));
    if (idempotencyKey != null) {
      add(headers, DeadLetterHeaders.IDEMPOTENCY_KEY, idempotencyKey);
    }
    add(headers, DeadLetterHeaders.REASON, reason.name());
    add(headers, DeadLetterHeaders.EXCEPTION_CLASS, exceptionClass);
    add(headers, DeadLetterHeaders.EXCEPTION_MESSAGE, message);
    add(headers, DeadLetterHeaders.ATTEMPTS, Integer.toString(attempts));
    return headers;
  }

  private static void add(RecordHeaders headers, String name, String value) {
    headers.remove(name); // a record dead-lettered twice keeps only the latest description
    headers.add(name, value.getBytes(StandardCharsets.UTF_8));
  }
}
