package dev.once.spring.kafka;

import dev.once.kafka.KafkaDeadLetters;
import dev.once.kafka.KeyDerivation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.common.utils.Exit;

/**
 * One KRaft broker (combined with its controller) in the test JVM, started on first use and shared
 * by every test class, with a producer and an admin client (as once-kafka's tests' Broker). Each
 * test uses topics and groups of its own ({@link #unique}).
 */
final class KafkaBroker {

  static final KafkaClusterTestKit CLUSTER;
  static final Admin ADMIN;
  static final KafkaProducer<String, String> PRODUCER;

  static {
    // As once-kafka's test Broker: the broker's fatal-fault handlers must not end the test JVM
    // with a non-zero code (surefire then fails the module after every test passed, "error
    // occurred in starting fork"), seen here when the exit hook stopped the broker.
    Exit.setHaltProcedure((code, message) -> System.err.println("Kafka asked to halt (" + code
        + "): " + message + "; ignored in tests"));
    Exit.setExitProcedure((code, message) -> System.err.println("Kafka asked to exit (" + code
        + "): " + message + "; ignored in tests"));
    try {
      CLUSTER = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
          .setCombined(true)
          .setNumBrokerNodes(1)
          .setNumControllerNodes(1)
          .build())
          // One broker: internal topics with one replica, or consumers never get records.
          .setConfigProp("offsets.topic.replication.factor", "1")
          .setConfigProp("offsets.topic.num.partitions", "1")
          .setConfigProp("transaction.state.log.replication.factor", "1")
          .setConfigProp("transaction.state.log.min.isr", "1")
          .setConfigProp("group.initial.rebalance.delay.ms", "0")
          .build();
      CLUSTER.format();
      CLUSTER.startup();
      CLUSTER.waitForReadyBrokers();
    } catch (Exception e) {
      throw new IllegalStateException("the Kafka test broker did not start", e);
    }
    ADMIN = CLUSTER.admin();
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, CLUSTER.bootstrapServers());
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    PRODUCER = new KafkaProducer<>(p);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      PRODUCER.close(Duration.ofSeconds(2));
      ADMIN.close(Duration.ofSeconds(2));
      // Bounded: a broker slow to stop must not hold the JVM past surefire's wait for the fork.
      Thread close = new Thread(() -> {
        try {
          CLUSTER.close();
        } catch (Exception e) {
          // exiting anyway
        }
      }, "kafka-test-broker-close");
      close.setDaemon(true);
      close.start();
      try {
        close.join(Duration.ofSeconds(15).toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }));
  }

  private KafkaBroker() {}

  static String bootstrapServers() {
    return CLUSTER.bootstrapServers();
  }

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Creates {@code name} with {@code partitions} partitions and its "-dlt" topic with one. */
  static String topic(String name, int partitions) {
    try {
      ADMIN.createTopics(List.of(new NewTopic(name, partitions, (short) 1),
          new NewTopic(name + KafkaDeadLetters.DEFAULT_SUFFIX, 1, (short) 1))).all().get();
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException(e);
    }
    return name;
  }

  /** Sends {@code value} to a partition, with an idempotency-key header when {@code key} is set. */
  static void send(String topic, int partition, String key, String value) {
    ProducerRecord<String, String> record = new ProducerRecord<>(topic, partition, value, value);
    if (key != null) {
      record.headers().add(KeyDerivation.DEFAULT_HEADER, key.getBytes(StandardCharsets.UTF_8));
    }
    try {
      PRODUCER.send(record).get();
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The offsets {@code group} has committed, by partition number. */
  static Map<Integer, Long> committed(String group) {
    try {
      Map<TopicPartition, OffsetAndMetadata> offsets = ADMIN.listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata().get();
      Map<Integer, Long> byPartition = new HashMap<>();
      offsets.forEach((tp, o) -> {
        if (o != null) {
          byPartition.put(tp.partition(), o.offset());
        }
      });
      return byPartition;
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException(e);
    }
  }

  /** How many records partition 0 of {@code topic} holds (its end offset). */
  static long endOffset(String topic) {
    TopicPartition tp = new TopicPartition(topic, 0);
    try {
      return ADMIN.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get()
          .offset();
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Reads {@code topic} (partition 0) from the beginning until {@code count} records or 60 s. */
  static List<ConsumerRecord<String, String>> readAll(String topic, int count) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, CLUSTER.bootstrapServers());
    p.put(ConsumerConfig.GROUP_ID_CONFIG, unique("reader"));
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(p)) {
      TopicPartition tp = new TopicPartition(topic, 0);
      reader.assign(List.of(tp));
      reader.seekToBeginning(List.of(tp));
      List<ConsumerRecord<String, String>> out = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (out.size() < count && System.nanoTime() < deadline) {
        reader.poll(Duration.ofMillis(100)).forEach(out::add);
      }
      return out;
    }
  }

  /** A header's UTF-8 value, or null. */
  static String header(ConsumerRecord<?, ?> record, String name) {
    var h = record.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}
