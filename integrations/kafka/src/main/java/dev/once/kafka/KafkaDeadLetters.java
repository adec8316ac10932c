package dev.once.kafka;

import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Dead letters as Kafka records: core's {@link DeadLetter} encoded as a record on a dead-letter
 * topic with the {@link DeadLetterHeaders}, and the {@link DeadLetterPublisher} that sends it.
 *
 * <pre>{@code
 * IdempotentConsumer<String, String> orders = IdempotentConsumer.builder(once, handler)
 *     .deadLetters(KafkaDeadLetters.to(producer))   // orders → orders-dlt
 *     .build();
 * }</pre>
 */
public final class KafkaDeadLetters {

  /** Suffix of the default dead-letter topic name: {@code orders} → {@code orders-dlt}. */
  public static final String DEFAULT_SUFFIX = "-dlt";

  /** How long {@link #to} waits for the broker's acknowledgement. */
  public static final Duration SEND_TIMEOUT = Duration.ofSeconds(30);

  private KafkaDeadLetters() {}

  /**
   * Publishes with {@code producer} (whose serializers match the consumer's deserializers) to the
   * original topic's name + {@value #DEFAULT_SUFFIX}, keeping the record's key and value, with
   * the {@linkplain #headers headers}; waits up to {@link #SEND_TIMEOUT} for the acknowledgement
   * and throws if it does not come (the original record is then not committed and comes again).
   * The producer is the caller's: it is neither flushed nor closed here.
   */
  public static <K, V> DeadLetterPublisher<ConsumerRecord<K, V>> to(Producer<K, V> producer) {
    return to(producer, record -> record.topic() + DEFAULT_SUFFIX);
  }

  /** As {@link #to(Producer)}, to the topic {@code topic} names for each record. */
  public static <K, V> DeadLetterPublisher<ConsumerRecord<K, V>> to(Producer<K, V> producer,
      Function<ConsumerRecord<K, V>, String> topic) {
    Objects.requireNonNull(producer, "producer");
    Objects.requireNonNull(topic, "topic");
    return letter -> producer.send(record(letter, topic.apply(letter.message())))
        .get(SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * The dead-letter record of {@code letter} for {@code topic}: the original key and value, no
   * partition (the dead-letter topic may have fewer; the key spreads records), the
   * {@linkplain #headers headers}.
   */
  public static <K, V> ProducerRecord<K, V> record(DeadLetter<ConsumerRecord<K, V>> letter,
      String topic) {
    Objects.requireNonNull(topic, "the dead-letter topic of a record");
    ConsumerRecord<K, V> r = letter.message();
    return new ProducerRecord<>(topic, null, r.key(), r.value(), headers(letter));
  }

  /**
   * The headers of the dead-letter record: the original record's headers followed by the
   * {@link DeadLetterHeaders} (UTF-8 text; numbers in decimal).
   */
  public static Headers headers(DeadLetter<? extends ConsumerRecord<?, ?>> letter) {
    ConsumerRecord<?, ?> record = letter.message();
    RecordHeaders headers = new RecordHeaders();
    for (Header h : record.headers()) {
      headers.add(h);
    }
    add(headers, DeadLetterHeaders.ORIGINAL_TOPIC, record.topic());
    add(headers, DeadLetterHeaders.ORIGINAL_PARTITION, Integer.toString(record.partition()));
    add(headers, DeadLetterHeaders.ORIGINAL_OFFSET, Long.toString(record.offset()));
    add(headers, DeadLetterHeaders.ORIGINAL_TIMESTAMP, Long.toString(record.timestamp()));
    if (letter.key() != null) {
      add(headers, DeadLetterHeaders.IDEMPOTENCY_KEY, letter.key().key());
    }
    add(headers, DeadLetterHeaders.REASON, letter.reason().name());
    add(headers, DeadLetterHeaders.EXCEPTION_CLASS, letter.exceptionClass());
    add(headers, DeadLetterHeaders.EXCEPTION_MESSAGE, letter.exceptionMessage());
    add(headers, DeadLetterHeaders.ATTEMPTS, Integer.toString(letter.attempts()));
    return headers;
  }

  private static void add(RecordHeaders headers, String name, String value) {
    headers.remove(name); // a record dead-lettered twice keeps only the latest description
    headers.add(name, value.getBytes(StandardCharsets.UTF_8));
  }
}
