package dev.once.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
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
 * by every test class, with a producer and an admin client. Each test uses topics and groups of
 * its own ({@link #unique}).
 */
final class Broker {

  static final KafkaClusterTestKit CLUSTER;
  static final Admin ADMIN;
  static final KafkaProducer<String, String> PRODUCER;

  static {
    // The broker runs in the test JVM: its fatal-fault handlers call Exit.halt/Exit.exit, which
    // would end the JVM with a non-zero code. Under load, a controller shut down by the exit hook
    // after every test passed can take that path, and surefire then reports the module failed
    // ("error occurred in starting fork"). Here a fault is printed; the tests decide.
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
      // Bounded: a broker slow to stop (a loaded machine) must not hold the JVM past surefire's
      // wait for the fork to exit; the JVM ends its threads anyway.
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

  private Broker() {}

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

  /** Consumer settings for {@code group}: manual commits, earliest, quick rebalances. */
  static Properties consumerProperties(String group) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, CLUSTER.bootstrapServers());
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "100");
    p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    return p;
  }

  static KafkaConsumer<String, String> consumer(String group) {
    return new KafkaConsumer<>(consumerProperties(group));
  }

  /** Sends {@code value} to a partition, with an idempotency-key header when {@code key} is set. */
  static void send(String topic, int partition, String key, String value) {
    ProducerRecord<String, String> record =
        new ProducerRecord<>(topic, partition, value, value);
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

  /** Reads {@code topic} (partition 0) from the beginning until {@code count} records or 20 s. */
  static List<ConsumerRecord<String, String>> readAll(String topic, int count) {
    Properties p = consumerProperties(unique("reader"));
    try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(p)) {
      TopicPartition tp = new TopicPartition(topic, 0);
      reader.assign(List.of(tp));
      reader.seekToBeginning(List.of(tp));
      List<ConsumerRecord<String, String>> out = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
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

  static String describe(List<ConsumerRecord<String, String>> records) {
    return records.stream().map(r -> r.partition() + "@" + r.offset() + "=" + r.value())
        .collect(Collectors.joining(", "));
  }
}
