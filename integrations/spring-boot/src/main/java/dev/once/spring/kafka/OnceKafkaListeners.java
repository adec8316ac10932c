package dev.once.spring.kafka;

import dev.once.Once;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.MessageHandler;
import dev.once.kafka.IdempotentConsumer;
import dev.once.kafka.KeyDerivation;
import dev.once.kafka.spring.KafkaTemplateDeadLetterPublisher;
import dev.once.kafka.spring.OnceBatchListener;
import dev.once.kafka.spring.OnceRecordListener;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Makes idempotent Spring Kafka listeners from a handler, with the context's {@link Once}, the
 * {@code once.kafka.*} {@link OnceKafkaProperties} and the context's dead-letter publisher (a
 * {@link KafkaTemplateDeadLetterPublisher} over Spring Boot's {@code KafkaTemplate}, unless the
 * application declares its own {@link DeadLetterPublisher} bean). Plug a listener into a container
 * whose ack mode is {@code MANUAL} (or {@code MANUAL_IMMEDIATE}): the listener acknowledges only
 * what is final. A container bean (a {@code @Bean} method) from Spring Boot's factory:
 *
 * <pre>{@code
 * ConcurrentMessageListenerContainer<String, String> orders(
 *     ConcurrentKafkaListenerContainerFactory<String, String> factory, OnceKafkaListeners once) {
 *   ConcurrentMessageListenerContainer<String, String> container = factory.createContainer("orders");
 *   container.getContainerProperties().setGroupId("shipping");     // also the keys' scope
 *   container.getContainerProperties().setAckMode(AckMode.MANUAL);
 *   container.setupMessageListener(once.batchListener(
 *       (ConsumerRecord<String, String> record, Attempt attempt) ->
 *           shipping.ship(record.value(), attempt.key())));
 *   return container;
 * }
 * }</pre>
 *
 * The record types are the handler's: the consumer's deserializers must produce them, and the
 * dead-letter template's serializers must take them.
 */
public final class OnceKafkaListeners {

  private final Once once;
  private final OnceKafkaProperties properties;
  private final DeadLetterPublisher<?> deadLetters;

  /**
   * Listeners over {@code once}, pre-filled from {@code properties}, dead-lettering through
   * {@code deadLetters} (null: none, each consumer must be given one).
   *
   * @throws IllegalArgumentException if a property is invalid (the builder's message)
   */
  public OnceKafkaListeners(Once once, OnceKafkaProperties properties,
      DeadLetterPublisher<?> deadLetters) {
    this.once = Objects.requireNonNull(once, "once");
    this.properties = Objects.requireNonNull(properties, "properties");
    this.deadLetters = deadLetters;
    consumer((record, attempt) -> { }); // bad properties fail now, at startup
  }

  /**
   * A builder for {@code handler}, pre-filled: the {@code Once}, the scope (if
   * {@code once.kafka.scope} is set), the key header, the {@code BatchConfig} (no-key policy, max
   * attempts, backoffs, batch claims) and the dead-letter publisher. Anything may be set again before
   * {@link IdempotentConsumer.Builder#build()}; to change one engine setting and keep the
   * properties' others, start from them: {@code .config(properties.toBatchConfig().toBuilder()
   * .maxAttempts(3).build())}, with the {@link OnceKafkaProperties} bean.
   */
  public <K, V> IdempotentConsumer.Builder<K, V> consumer(
      MessageHandler<ConsumerRecord<K, V>> handler) {
    IdempotentConsumer.Builder<K, V> builder = IdempotentConsumer.builder(once, handler)
        .key(KeyDerivation.header(properties.getKeyHeader()))
        .config(properties.toBatchConfig());
    if (properties.getScope() != null && !properties.getScope().isBlank()) {
      builder.scope(properties.getScope());
    }
    if (deadLetters != null) {
      builder.deadLetters(deadLetters());
    }
    return builder;
  }

  /**
   * A batch listener (one claim per poll batch) running {@code handler} once per key: for a
   * container in {@code MANUAL} ack mode.
   *
   * @throws IllegalStateException if there is no dead-letter publisher
   */
  public <K, V> OnceBatchListener<K, V> batchListener(
      MessageHandler<ConsumerRecord<K, V>> handler) {
    return new OnceBatchListener<>(consumer(handler).build());
  }

  /**
   * A record listener (one claim per record) running {@code handler} once per key: for a
   * container in {@code MANUAL} ack mode. Prefer {@link #batchListener} for throughput.
   *
   * @throws IllegalStateException if there is no dead-letter publisher
   */
  public <K, V> OnceRecordListener<K, V> recordListener(
      MessageHandler<ConsumerRecord<K, V>> handler) {
    return new OnceRecordListener<>(consumer(handler).build());
  }

  /** The {@link Once} the listeners claim through. */
  public Once once() {
    return once;
  }

  // The publisher bean is typed by the context's template; the handler's types must fit it.
  @SuppressWarnings("unchecked")
  private <K, V> DeadLetterPublisher<ConsumerRecord<K, V>> deadLetters() {
    return (DeadLetterPublisher<ConsumerRecord<K, V>>) deadLetters;
  }
}
