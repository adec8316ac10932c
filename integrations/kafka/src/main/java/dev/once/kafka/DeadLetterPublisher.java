package dev.once.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Where records given up on go. {@link #publish} must return only once the dead letter is durable
 * (for Kafka: acknowledged by the broker), and throw otherwise: the original record is then not
 * committed and comes again.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
@FunctionalInterface
public interface DeadLetterPublisher<K, V> {

  /** Suffix of the default dead-letter topic name: {@code orders} → {@code orders-dlt}. */
  String DEFAULT_SUFFIX = "-dlt";

  /** How long {@link #to} waits for the broker's acknowledgement. */
  Duration SEND_TIMEOUT = Duration.ofSeconds(30);

  /** Publishes {@code letter} durably, or throws. */
  void publish(DeadLetter<K, V> letter) throws Exception;

  /**
   * Publishes with {@code producer} (whose serializers match the consumer's deserializers) to the
   * original topic's name + {@value #DEFAULT_SUFFIX}, keeping the record's key and value, with the
   * {@link DeadLetter#headers()}; waits up to {@link #SEND_TIMEOUT} for the acknowledgement.
   * The producer is the caller's: it is neither flushed nor closed here.
   */
  static <K, V> DeadLetterPublisher<K, V> to(Producer<K, V> producer) {
    return to(producer, record -> record.topic() + DEFAULT_SUFFIX);
  }

  /** As {@link #to(Producer)}, to the topic {@code topic} names for each record. */
  static <K, V> DeadLetterPublisher<K, V> to(Producer<K, V> producer,
      Function<ConsumerRecord<K, V>, String> topic) {
    Objects.requireNonNull(producer, "producer");
    Objects.requireNonNull(topic, "topic");
    return letter -> {
      ConsumerRecord<K, V> r = letter.record();
      // No partition: the dead-letter topic may have fewer partitions; the key spreads records.
      ProducerRecord<K, V> out = new ProducerRecord<>(topic.apply(r), null, r.key(), r.value(),
          letter.headers());
      producer.send(out).get(SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    };
  }
}
