package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.IdempotencyKey;
import dev.once.batch.DeadLetter;
import dev.once.kafka.spring.KafkaTemplateDeadLetterPublisher;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/** The KafkaTemplate dead-letter publisher against the real broker. */
class KafkaTemplateDeadLetterPublisherTest {

  @Test
  void publishesToTheDeadLetterTopicWithTheHeadersOnceAcknowledged() throws Exception {
    String topic = Broker.topic(Broker.unique("template-dlt"), 1);
    DefaultKafkaProducerFactory<String, String> producers = producers(Broker.CLUSTER.bootstrapServers());
    try {
      KafkaTemplateDeadLetterPublisher.to(new KafkaTemplate<>(producers))
          .publish(letter(topic, "k1"));

      // publish returned: the broker has acknowledged the record.
      List<ConsumerRecord<String, String>> dead = Broker.readAll(topic + "-dlt", 1);
      assertThat(dead).hasSize(1);
      ConsumerRecord<String, String> r = dead.get(0);
      assertThat(r.key()).isEqualTo("order-1");
      assertThat(r.value()).isEqualTo("poison");
      assertThat(Broker.header(r, "trace")).isEqualTo("t-1");
      assertThat(Broker.header(r, DeadLetterHeaders.ORIGINAL_TOPIC)).isEqualTo(topic);
      assertThat(Broker.header(r, DeadLetterHeaders.ORIGINAL_OFFSET)).isEqualTo("7");
      assertThat(Broker.header(r, DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("k1");
      assertThat(Broker.header(r, DeadLetterHeaders.REASON)).isEqualTo("TERMINAL_FAILURE");
      assertThat(Broker.header(r, DeadLetterHeaders.EXCEPTION_MESSAGE)).isEqualTo("cannot parse");
      assertThat(Broker.header(r, DeadLetterHeaders.ATTEMPTS)).isEqualTo("1");
    } finally {
      producers.destroy();
    }
  }

  @Test
  void aTransactionalTemplateCommitsTheDeadLetterBeforeReturning() throws Exception {
    String topic = Broker.topic(Broker.unique("template-tx-dlt"), 1);
    DefaultKafkaProducerFactory<String, String> producers = producers(Broker.CLUSTER.bootstrapServers());
    producers.setTransactionIdPrefix(Broker.unique("once-dlt-tx"));
    try {
      KafkaTemplate<String, String> template = new KafkaTemplate<>(producers);
      assertThat(template.isTransactional()).isTrue();
      KafkaTemplateDeadLetterPublisher.to(template, r -> r.topic() + "-dlt")
          .publish(letter(topic, "k2"));

      // Only a committed record is visible to a read_committed reader.
      List<ConsumerRecord<String, String>> dead = readCommitted(topic + "-dlt", 1);
      assertThat(dead).extracting(ConsumerRecord::value).containsExactly("poison");
      assertThat(Broker.header(dead.get(0), DeadLetterHeaders.IDEMPOTENCY_KEY)).isEqualTo("k2");
    } finally {
      producers.destroy();
    }
  }

  @Test
  void throwsWhenTheBrokerCannotBeReached() throws Exception {
    int closed;
    try (ServerSocket socket = new ServerSocket(0)) {
      closed = socket.getLocalPort(); // free again once closed: nothing listens there
    }
    DefaultKafkaProducerFactory<String, String> producers = producers("127.0.0.1:" + closed);
    producers.updateConfigs(Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, 1_000,
        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 2_000,
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 1_000));
    try {
      KafkaTemplateDeadLetterPublisher<String, String> publisher =
          KafkaTemplateDeadLetterPublisher.to(new KafkaTemplate<>(producers))
              .withTimeout(Duration.ofSeconds(20));
      assertThatThrownBy(() -> publisher.publish(letter("nowhere", "k3")))
          .isInstanceOf(Exception.class);
    } finally {
      producers.destroy();
    }
  }

  @Test
  void refusesATimeoutThatIsNotPositive() {
    KafkaTemplateDeadLetterPublisher<String, String> publisher =
        KafkaTemplateDeadLetterPublisher.to(new KafkaTemplate<>(producers("127.0.0.1:1")));
    assertThat(publisher.timeout()).isEqualTo(KafkaDeadLetters.SEND_TIMEOUT);
    assertThat(publisher.withTimeout(Duration.ofSeconds(3)).timeout())
        .isEqualTo(Duration.ofSeconds(3));
    assertThatThrownBy(() -> publisher.withTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
  }

  private static DeadLetter<ConsumerRecord<String, String>> letter(String topic, String key) {
    RecordHeaders headers = new RecordHeaders();
    headers.add("trace", "t-1".getBytes(StandardCharsets.UTF_8));
    ConsumerRecord<String, String> record = new ConsumerRecord<>(topic, 0, 7L, 1_000L,
        TimestampType.CREATE_TIME, -1, -1, "order-1", "poison", headers, Optional.empty());
    return new DeadLetter<>(record, DeadLetter.Reason.TERMINAL_FAILURE,
        key == null ? null : IdempotencyKey.of("orders", key),
        "com.example.Poison", "cannot parse", 1);
  }

  private static DefaultKafkaProducerFactory<String, String> producers(String bootstrap) {
    Map<String, Object> config = new HashMap<>();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
    config.put(ProducerConfig.ACKS_CONFIG, "all");
    return new DefaultKafkaProducerFactory<>(config);
  }

  private static List<ConsumerRecord<String, String>> readCommitted(String topic, int count) {
    Properties p = Broker.consumerProperties(Broker.unique("reader"));
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(p)) {
      TopicPartition tp = new TopicPartition(topic, 0);
      reader.assign(List.of(tp));
      reader.seekToBeginning(List.of(tp));
      List<ConsumerRecord<String, String>> out = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (out.size() < count && System.nanoTime() < deadline) {
        reader.poll(Duration.ofMillis(100)).forEach(out::add);
      }
      return out;
    }
  }
}
