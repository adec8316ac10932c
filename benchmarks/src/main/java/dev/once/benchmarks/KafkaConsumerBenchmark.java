package dev.once.benchmarks;

import dev.once.Once;
import dev.once.OnceListener;
import dev.once.batch.BatchConfig;
import dev.once.benchmarks.BenchStores.StoreUnderTest;
import dev.once.kafka.IdempotentConsumer;
import dev.once.kafka.IdempotentConsumerLoop;
import dev.once.kafka.KafkaDeadLetters;
import dev.once.kafka.KeyDerivation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/**
 * Messages per second through the idempotent consumer ({@code once-kafka}) with one batch claim
 * and one batch completion per poll ({@code claimAll} + {@code completeAll}) against one claim and
 * one completion per record, side by side in one run, per store.
 * Not JMH: each measurement is a whole consumption of a topic by a fresh consumer group, through
 * the real poll loop, broker and store.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.KafkaConsumerBenchmark
 * </pre>
 *
 * <p>System properties: {@code once.bench.stores} (comma-separated, default {@code postgres};
 * also {@code redis} and {@code memory}), {@code once.bench.records} (per run, default 20000),
 * {@code once.bench.rounds} (measured rounds per mode, default 3), {@code once.bench.postgres}
 * (a JDBC URL instead of the embedded server), {@code once.bench.redis} (a {@code redis://} URI
 * instead of a private {@code redis-server} started on a free loopback port without persistence;
 * the benchmark's keys get a unique prefix and are never flushed, they expire with their
 * retention). A Kafka KRaft broker runs in this JVM
 * (kafka-test-common-runtime); PostgreSQL runs embedded (zonky), whose defaults leave
 * {@code fsync} on and set {@code synchronous_commit} off. 500 records per poll, one partition, a handler
 * that does nothing, so only the consumer, the store and the commits are measured.
 *
 * <p>To add a store, add a case to {@link #open(String)}.
 */
public final class KafkaConsumerBenchmark {

  private static final int RECORDS_PER_POLL = 500;
  private static final byte[] PAYLOAD = ("{\"orderId\":\"o-000000\",\"amount\":1000,"
      + "\"currency\":\"EUR\",\"customer\":\"cus_42\",\"note\":\"benchmark payload\"}")
      .getBytes(StandardCharsets.UTF_8);

  private KafkaConsumerBenchmark() {}

  /** One run's measurements. */
  record Run(String store, boolean batch, int records, double seconds, double claimMicros,
      double completeMicros) {
    double perSecond() {
      return records / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    int records = Integer.getInteger("once.bench.records", 20_000);
    int rounds = Integer.getInteger("once.bench.rounds", 3);
    List<String> stores = Arrays.asList(System.getProperty("once.bench.stores", "postgres")
        .split(","));

    System.out.printf("once-kafka consumer benchmark: %d records per run, %d per poll, %d rounds,"
        + " stores %s%n", records, RECORDS_PER_POLL, rounds, stores);
    KafkaClusterTestKit cluster = startBroker();
    List<Run> runs = new ArrayList<>();
    try (Admin admin = cluster.admin();
        KafkaProducer<byte[], byte[]> producer = producer(cluster.bootstrapServers())) {
      String topic = "bench-" + UUID.randomUUID().toString().substring(0, 8);
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1),
          new NewTopic(topic + KafkaDeadLetters.DEFAULT_SUFFIX, 1, (short) 1))).all().get();
      for (int i = 0; i < records; i++) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, null, PAYLOAD);
        r.headers().add(KeyDerivation.DEFAULT_HEADER,
            ("evt-" + i).getBytes(StandardCharsets.UTF_8));
        producer.send(r);
      }
      long producing = System.nanoTime();
      producer.flush();
      System.out.printf("produced %d records to %s (flush %.1f s)%n", records, topic,
          (System.nanoTime() - producing) / 1e9);

      for (String name : stores) {
        try (StoreUnderTest store = BenchStores.open(name.trim(), "kafka")) {
          // Warm-up (JIT, pools, broker caches): one run of each mode, not reported.
          consume(cluster, producer, topic, records, store, false);
          consume(cluster, producer, topic, records, store, true);
          for (int round = 0; round < rounds; round++) {
            for (boolean batch : new boolean[] {false, true}) {
              Run run = consume(cluster, producer, topic, records, store, batch);
              runs.add(run);
              System.out.printf(Locale.ROOT, "  %-9s %-10s %,10.0f msg/s   claim %7.1f µs/record"
                  + "   complete %7.1f µs/record%n", run.store(),
                  run.batch() ? "batch" : "per-record", run.perSecond(), run.claimMicros(),
                  run.completeMicros());
            }
          }
        }
      }
    } finally {
      cluster.close();
    }
    report(runs);
    System.exit(0); // the broker and embedded server leave non-daemon threads behind
  }

  // ---------------------------------------------------------------------------------------------


  /** Consumes the whole topic with a fresh group (so every key is new) and times it. */
  static Run consume(KafkaClusterTestKit cluster, KafkaProducer<byte[], byte[]> producer,
      String topic, int records, StoreUnderTest store, boolean batch) throws Exception {
    Map<String, LongAdder> storeNanos = new ConcurrentHashMap<>();
    Once once = Once.builder(store.store()).listener(new OnceListener() {
      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        storeNanos.computeIfAbsent(operation, o -> new LongAdder()).add(elapsed.toNanos());
      }
    }).build();
    AtomicLong handled = new AtomicLong();
    AtomicLong first = new AtomicLong();
    AtomicLong last = new AtomicLong();
    IdempotentConsumer<byte[], byte[]> consumer = IdempotentConsumer
        .<byte[], byte[]>builder(once, (record, attempt) -> {
          long now = System.nanoTime();
          if (handled.getAndIncrement() == 0) {
            first.set(now);
          }
          last.set(now);
        })
        .scope("bench-" + UUID.randomUUID().toString().substring(0, 8))
        .config(BatchConfig.builder().batchClaims(batch).build())
        .deadLetters(KafkaDeadLetters.to(producer))
        .pollTimeout(Duration.ofMillis(100))
        .build();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
    p.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-" + UUID.randomUUID());
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(RECORDS_PER_POLL));
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    IdempotentConsumerLoop<byte[], byte[]> loop =
        consumer.loop(new KafkaConsumer<>(p), List.of(topic));
    Thread thread = new Thread(loop, "bench-consumer");
    thread.start();
    long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
    while (handled.get() < records) {
      if (System.nanoTime() > deadline || !thread.isAlive()) {
        throw new IllegalStateException("consumed only " + handled.get() + " of " + records);
      }
      Thread.sleep(5); // polling for completion; the measurement uses the handler's own clock
    }
    loop.close();
    thread.join();
    // From the first handled record to the last: the group join is outside, every claim, handler,
    // completion and offset commit inside (the last batch's commit aside).
    double seconds = (last.get() - first.get()) / 1e9;
    String claimOp = batch ? "claimAll" : "claim";
    String completeOp = batch ? "completeAll" : "complete";
    return new Run(store.name(), batch, records, seconds,
        micros(storeNanos.get(claimOp), records), micros(storeNanos.get(completeOp), records));
  }

  private static double micros(LongAdder nanos, int records) {
    return nanos == null ? 0 : nanos.sum() / 1e3 / records;
  }

  static void report(List<Run> runs) {
    System.out.println();
    System.out.println("| store | store calls | msg/s (median) | all runs | claim µs/record |"
        + " complete µs/record |");
    System.out.println("|---|---|---:|---|---:|---:|");
    Map<String, double[]> medians = new LinkedHashMap<>();
    for (String store : runs.stream().map(Run::store).distinct().toList()) {
      double[] pair = new double[2];
      for (boolean batch : new boolean[] {false, true}) {
        List<Run> mine = runs.stream()
            .filter(r -> r.store().equals(store) && r.batch() == batch).toList();
        double[] rates = mine.stream().mapToDouble(Run::perSecond).sorted().toArray();
        double median = rates[rates.length / 2];
        pair[batch ? 1 : 0] = median;
        System.out.printf(Locale.ROOT, "| %s | %s | %,.0f | %s | %.1f | %.1f |%n", store,
            batch ? "claimAll + completeAll per poll" : "one per record", median,
            String.join(" / ", mine.stream()
                .map(r -> String.format(Locale.ROOT, "%,.0f", r.perSecond())).toList()),
            mine.stream().mapToDouble(Run::claimMicros).average().orElse(0),
            mine.stream().mapToDouble(Run::completeMicros).average().orElse(0));
      }
      medians.put(store, pair);
    }
    System.out.println();
    medians.forEach((store, pair) -> System.out.printf(Locale.ROOT,
        "%s: batch / per-record = %.2f× (goal ≥ 5×)%n", store, pair[1] / pair[0]));
  }

  private static KafkaClusterTestKit startBroker() throws Exception {
    KafkaClusterTestKit cluster = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
        .setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build())
        .setConfigProp("offsets.topic.replication.factor", "1")
        .setConfigProp("offsets.topic.num.partitions", "1")
        .setConfigProp("transaction.state.log.replication.factor", "1")
        .setConfigProp("transaction.state.log.min.isr", "1")
        .setConfigProp("group.initial.rebalance.delay.ms", "0")
        .build();
    cluster.format();
    cluster.startup();
    cluster.waitForReadyBrokers();
    return cluster;
  }

  private static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    // Large batches: the test broker appends slowly per request, and producing is not measured.
    p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(512 * 1024));
    p.put(ProducerConfig.ACKS_CONFIG, "1");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
    return new KafkaProducer<>(p);
  }
}
