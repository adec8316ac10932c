package dev.once.kafka.spring;

import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;
import dev.once.kafka.KafkaDeadLetters;
import dev.once.support.Checks;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.SendResult;

/**
 * A {@link DeadLetterPublisher} over Spring Kafka's {@link KafkaOperations} (a
 * {@link KafkaTemplate}, e.g. Spring Boot's): publishes each dead letter to the original topic's
 * name + {@value KafkaDeadLetters#DEFAULT_SUFFIX} (or the topic a function names), keeping the
 * record's key and value, with the {@link KafkaDeadLetters#headers headers}, and returns only once the broker
 * has acknowledged it, waiting up to {@link #timeout()}; otherwise it throws, and the original
 * record is not final and comes again.
 *
 * <p>A transactional template sends each dead letter in a local transaction of its own
 * ({@link KafkaOperations#executeInTransaction}), committed before {@link #publish} returns: never
 * in a transaction of the listener container, which would commit only after the failure is
 * stored. The template's serializers must match the consumer's deserializers (the dead letter
 * carries the deserialized key and value).
 *
 * <pre>{@code
 * IdempotentConsumer<String, String> orders = IdempotentConsumer.builder(once, handler)
 *     .deadLetters(KafkaTemplateDeadLetterPublisher.to(kafkaTemplate))   // orders → orders-dlt
 *     .build();
 * }</pre>
 *
 * Thread-safe, as the template is.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class KafkaTemplateDeadLetterPublisher<K, V>
    implements DeadLetterPublisher<ConsumerRecord<K, V>> {

  private final KafkaOperations<K, V> operations;
  private final Function<ConsumerRecord<K, V>, String> topic;
  private final Duration timeout;

  private KafkaTemplateDeadLetterPublisher(KafkaOperations<K, V> operations,
      Function<ConsumerRecord<K, V>, String> topic, Duration timeout) {
    this.operations = operations;
    this.topic = topic;
    this.timeout = timeout;
  }

  /**
   * Publishes with {@code operations} to the original topic's name +
   * {@value KafkaDeadLetters#DEFAULT_SUFFIX}, waiting up to
   * {@link KafkaDeadLetters#SEND_TIMEOUT} for the acknowledgement.
   */
  public static <K, V> KafkaTemplateDeadLetterPublisher<K, V> to(KafkaOperations<K, V> operations) {
    return to(operations, record -> record.topic() + KafkaDeadLetters.DEFAULT_SUFFIX);
  }

  /** As {@link #to(KafkaOperations)}, to the topic {@code topic} names for each record. */
  public static <K, V> KafkaTemplateDeadLetterPublisher<K, V> to(KafkaOperations<K, V> operations,
      Function<ConsumerRecord<K, V>, String> topic) {
    return new KafkaTemplateDeadLetterPublisher<>(Objects.requireNonNull(operations, "operations"),
        Objects.requireNonNull(topic, "topic"), KafkaDeadLetters.SEND_TIMEOUT);
  }

  /** This publisher, waiting up to {@code timeout} for each acknowledgement instead. */
  public KafkaTemplateDeadLetterPublisher<K, V> withTimeout(Duration timeout) {
    return new KafkaTemplateDeadLetterPublisher<>(operations, topic,
        Checks.positive(timeout, "timeout"));
  }

  /** How long {@link #publish} waits for the broker's acknowledgement. */
  public Duration timeout() {
    return timeout;
  }

  /**
   * Sends the dead letter and waits for the broker's acknowledgement.
   *
   * @throws java.util.concurrent.TimeoutException if it did not come within {@link #timeout()}
   *     (the letter may still arrive: dead letters are at-least-once)
   * @throws Exception the send's failure otherwise
   */
  @Override
  public void publish(DeadLetter<ConsumerRecord<K, V>> letter) throws Exception {
    ProducerRecord<K, V> out = KafkaDeadLetters.record(letter, topic.apply(letter.message()));
    if (!operations.isTransactional()) {
      await(operations.send(out));
      return;
    }
    try {
      operations.executeInTransaction(ops -> {
        try {
          return await(ops.send(out));
        } catch (Exception e) {
          throw new SendFailed(e); // aborts the local transaction
        }
      });
    } catch (SendFailed e) {
      throw (Exception) e.getCause();
    }
  }

  private SendResult<K, V> await(CompletableFuture<SendResult<K, V>> sent) throws Exception {
    try {
      return sent.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  /** Carries a send's checked failure out of the transaction callback. */
  private static final class SendFailed extends RuntimeException {
    SendFailed(Exception cause) {
      super(cause);
    }
  }
}
