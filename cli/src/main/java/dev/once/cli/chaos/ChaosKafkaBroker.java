package dev.once.cli.chaos;

import dev.once.Once;
import dev.once.kafka.IdempotentConsumer;
import dev.once.kafka.IdempotentConsumerLoop;
import dev.once.kafka.KafkaDeadLetters;
import dev.once.kafka.KeyDerivation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka for {@code once chaos --broker kafka}: a topic named after the run (partitions of the
 * run, the cluster's default replication), its dead-letter topic ({@code <topic>-dlt}, the
 * adapter's default) and a consumer group of the same name. Events are sent with
 * {@code acks=all}, the event id as the record key (a duplicate lands in the same partition, as a
 * producer's retry does) and in the {@value KeyDerivation#DEFAULT_HEADER} header, the adapter's
 * key. Workers consume through {@link IdempotentConsumer} and its poll loop (manual commits).
 */
final class ChaosKafkaBroker extends ChaosBroker {

  private static final long TIMEOUT_MILLIS = 15_000;

  private Admin admin;
  private KafkaProducer<String, byte[]> producer;
  private String cluster = "";

  ChaosKafkaBroker(Target target) {
    super(target);
  }

  private String topic() {
    return target.name();
  }

  private String deadLetterTopic() {
    return target.name() + KafkaDeadLetters.DEFAULT_SUFFIX;
  }

  private String group() {
    return target.name();
  }

  private Properties common() {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, target.uri());
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(TIMEOUT_MILLIS));
    return p;
  }

  private KafkaProducer<String, byte[]> producer() {
    Properties p = common();
    p.remove(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return new KafkaProducer<>(p);
  }

  private KafkaConsumer<String, byte[]> consumer(String group, String member) {
    Properties p = common();
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    if (member != null) {
      // Static membership: a worker's replacement (a kill, a SIGTERM) takes its place and its
      // partitions at once, without a rebalance of the whole group, as a restarted pod with a
      // stable name does.
      p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, member);
    }
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(target.batch()));
    // A dead (killed) member leaves the group after the session timeout, the smallest the
    // brokers allow by default; a frozen one too, if frozen longer.
    p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
    p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  @Override
  void connect() {
    try {
      admin = Admin.create(common());
      Collection<org.apache.kafka.common.Node> nodes = admin.describeCluster().nodes()
          .get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
      cluster = nodes.size() + (nodes.size() == 1 ? " broker" : " brokers");
      producer = producer();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unreachable(target, e);
    } catch (java.util.concurrent.TimeoutException e) {
      close();
      throw unreachable(target, new IllegalStateException("no broker answered within "
          + TIMEOUT_MILLIS / 1000 + " s"));
    } catch (Exception e) {
      close();
      throw unreachable(target, e);
    }
  }

  @Override
  String describe() {
    return "Kafka (" + cluster + ") at " + target.uri() + ", topic " + topic() + " ("
        + target.partitions() + " partitions), group " + group() + ", dead letters to "
        + deadLetterTopic();
  }

  @Override
  String keyDescription() {
    return "same record key and " + KeyDerivation.DEFAULT_HEADER + " header";
  }

  @Override
  void create() throws Exception {
    admin.createTopics(List.of(
            new NewTopic(topic(), Optional.of(target.partitions()), Optional.empty()),
            new NewTopic(deadLetterTopic(), Optional.of(1), Optional.empty())))
        .all().get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
  }

  @Override
  void publish(List<Event> events) throws Exception {
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    for (Event e : events) {
      ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic(), e.id(), e.body());
      record.headers().add(KeyDerivation.DEFAULT_HEADER, e.id().getBytes(StandardCharsets.UTF_8));
      sent.add(producer.send(record));
    }
    producer.flush();
    for (Future<RecordMetadata> f : sent) {
      f.get(30, TimeUnit.SECONDS);
    }
  }

  /** End offsets minus the group's committed offsets. */
  private long lag() throws Exception {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int p = 0; p < target.partitions(); p++) {
      latest.put(new TopicPartition(topic(), p), OffsetSpec.latest());
    }
    var ends = admin.listOffsets(latest).all().get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group())
        .partitionsToOffsetAndMetadata().get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    long lag = 0;
    for (var e : ends.entrySet()) {
      OffsetAndMetadata c = committed.get(e.getKey());
      lag += e.getValue().offset() - (c == null ? 0 : c.offset());
    }
    return lag;
  }

  @Override
  long waiting() throws Exception {
    return lag();
  }

  @Override
  long unsettled() throws Exception {
    return lag();
  }

  @Override
  boolean countsUnacknowledged() {
    return true;
  }

  @Override
  List<byte[]> deadLetters() throws Exception {
    List<byte[]> bodies = new ArrayList<>();
    try (KafkaConsumer<String, byte[]> reader = consumer(group() + "-audit", null)) {
      TopicPartition tp = new TopicPartition(deadLetterTopic(), 0);
      reader.assign(List.of(tp));
      reader.seekToBeginning(List.of(tp));
      long end = reader.endOffsets(List.of(tp)).get(tp);
      long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
      while (reader.position(tp) < end) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException("could not read the dead-letter topic "
              + deadLetterTopic() + " to its end in " + TIMEOUT_MILLIS / 1000 + " s");
        }
        for (ConsumerRecord<String, byte[]> r : reader.poll(Duration.ofMillis(200))) {
          bodies.add(r.value());
        }
      }
    }
    return bodies;
  }

  @Override
  void delete() throws Exception {
    admin.deleteTopics(List.of(topic(), deadLetterTopic())).all()
        .get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    try {
      // The workers' static members stay in the group until their session times out.
      admin.removeMembersFromConsumerGroup(group(), new RemoveMembersFromConsumerGroupOptions())
          .all().get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.ExecutionException none) {
      // no member left
    }
    admin.deleteConsumerGroups(List.of(group())).all().get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
  }

  @Override
  Consumer consume(Once once, Handler handler, String member) {
    KafkaProducer<String, byte[]> letters = producer();
    IdempotentConsumer<String, byte[]> consumer = IdempotentConsumer.<String, byte[]>builder(once,
            (record, attempt) -> handler.handle(record.value(), attempt))
        .scope(target.scope())
        .key(KeyDerivation.header(KeyDerivation.DEFAULT_HEADER))
        .deadLetters(KafkaDeadLetters.to(letters))
        .pollTimeout(Duration.ofMillis(200))
        .build();
    KafkaConsumer<String, byte[]> kafka = consumer(group(), member);
    IdempotentConsumerLoop<String, byte[]> loop = consumer.loop(kafka, List.of(topic()));
    return ChaosLoopConsumer.start("once-chaos-kafka", loop::run, "the poll loop ended", () -> {
      loop.close();
      letters.close(Duration.ofSeconds(5));
    });
  }

  @Override
  public void close() {
    if (producer != null) {
      producer.close(Duration.ofSeconds(5));
    }
    if (admin != null) {
      admin.close(Duration.ofSeconds(5));
    }
  }
}
