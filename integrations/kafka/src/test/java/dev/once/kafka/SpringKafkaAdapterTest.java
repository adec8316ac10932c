package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.kafka.spring.OnceBatchListener;
import dev.once.kafka.spring.OnceRecordListener;
import dev.once.testkit.Await;
import dev.once.testkit.MemoryEffects;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;

/** The Spring Kafka adapters in a real Spring listener container against the broker. */
class SpringKafkaAdapterTest {

  // --8<-- [start:spring]
  /** A Spring Kafka container whose batch listener handles each order once. */
  static KafkaMessageListenerContainer<String, String> ordersContainer(
      Map<String, Object> consumerConfig, String topic, Once once,
      Producer<String, String> producer, Shipping shipping) {
    IdempotentConsumer<String, String> orders = IdempotentConsumer
        .builder(once, (ConsumerRecord<String, String> record, dev.once.Attempt attempt) ->
            shipping.ship(record.value(), attempt.key()))
        .deadLetters(KafkaDeadLetters.to(producer))
        .build();
    ContainerProperties properties = new ContainerProperties(topic);
    properties.setAckMode(ContainerProperties.AckMode.MANUAL_IMMEDIATE); // the adapters ack
    properties.setMessageListener(new OnceBatchListener<>(orders)); // or OnceRecordListener
    return new KafkaMessageListenerContainer<>(
        new DefaultKafkaConsumerFactory<String, String>(consumerConfig), properties);
  }
  // --8<-- [end:spring]

  /** The side effect of the example: ships an order, deduplicated downstream by {@code key}. */
  interface Shipping {
    void ship(String order, String key) throws Exception;
  }

  @Test
  void batchListenerHandlesEachEventOnceThroughDuplicatesAndRetries() {
    String topic = Broker.topic(Broker.unique("spring-batch"), 2);
    String group = Broker.unique("group");
    MemoryEffects effects = new MemoryEffects();
    AtomicInteger failures = new AtomicInteger();
    for (int i = 0; i < 20; i++) {
      Broker.send(topic, i % 2, "k" + i, "e" + i);
      Broker.send(topic, i % 2, "k" + i, "e" + i);
    }
    Shipping shipping = (order, key) -> {
      if (order.equals("e5") && failures.incrementAndGet() <= 2) {
        throw new IllegalStateException("transient");
      }
      effects.record(order, "0");
    };
    KafkaMessageListenerContainer<String, String> container =
        ordersContainer(config(group), topic, Once.builder(new InMemoryStore()).build(),
            Broker.PRODUCER, shipping);
    container.getContainerProperties().setPollTimeout(100); // quick stop
    container.start();
    try {
      Await.until("everything committed",
          () -> Map.of(0, 20L, 1, 20L).equals(Broker.committed(group)),
          () -> Broker.committed(group) + " " + effects.counts());
      assertThat(effects.counts()).hasSize(20).allSatisfy((event, n) -> assertThat(n).isOne());
      assertThat(failures).hasValue(3);
    } finally {
      container.stop();
    }
  }

  @Test
  void recordListenerHandlesEachEventOnceThroughDuplicatesAndRetries() {
    String topic = Broker.topic(Broker.unique("spring-record"), 1);
    String group = Broker.unique("group");
    MemoryEffects effects = new MemoryEffects();
    AtomicInteger failures = new AtomicInteger();
    for (int i = 0; i < 10; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    IdempotentConsumer<String, String> consumer = IdempotentConsumer
        .builder(Once.builder(new InMemoryStore()).build(),
            (ConsumerRecord<String, String> record, dev.once.Attempt attempt) -> {
              if (record.value().equals("e3") && failures.incrementAndGet() <= 2) {
                throw new IllegalStateException("transient");
              }
              effects.record(record.value(), String.valueOf(record.partition()));
            })
        .deadLetters(KafkaDeadLetters.to(Broker.PRODUCER))
        .config(IdempotentConsumerContract.retries().build())
        .build();
    ContainerProperties properties = new ContainerProperties(topic);
    properties.setAckMode(ContainerProperties.AckMode.MANUAL_IMMEDIATE);
    properties.setMessageListener(new OnceRecordListener<>(consumer));
    properties.setPollTimeout(100); // quick stop
    KafkaMessageListenerContainer<String, String> container = new KafkaMessageListenerContainer<>(
        new DefaultKafkaConsumerFactory<String, String>(config(group)), properties);
    container.start();
    try {
      Await.until("everything committed", () -> Map.of(0, 20L).equals(Broker.committed(group)),
          () -> Broker.committed(group) + " " + effects.counts());
      assertThat(effects.counts()).hasSize(10).allSatisfy((event, n) -> assertThat(n).isOne());
      assertThat(effects.sequence("0")).containsExactly("e0", "e1", "e2", "e3", "e4", "e5", "e6",
          "e7", "e8", "e9");
    } finally {
      container.stop();
    }
  }

  private static Map<String, Object> config(String group) {
    Map<String, Object> config = new HashMap<>();
    Broker.consumerProperties(group).forEach((k, v) -> config.put((String) k, v));
    return config;
  }
}
