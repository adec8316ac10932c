package dev.once.benchmarks;

import dev.once.Once;
import dev.once.OnceListener;
import dev.once.benchmarks.BenchStores.StoreUnderTest;
import dev.once.sqs.IdempotentSqsConsumer;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.elasticmq.rest.sqs.SQSRestServer;
import org.elasticmq.rest.sqs.SQSRestServerBuilder;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;

/**
 * Messages per second through the idempotent SQS consumer ({@code once-sqs}) with one batch claim
 * and one batch completion per batch ({@code claimAll} + {@code completeAll}) against one claim and
 * one completion per message ({@code batchClaims(false)}), side by side in one run, per store.
 * Not JMH: each measurement is a whole consumption of a fresh queue by a fresh consumer, through
 * the real receive loop, SQS server and store.
 *
 * <pre>
 * ./mvnw -q -B -pl benchmarks package -DskipTests
 * java -cp "benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)" \
 *     dev.once.benchmarks.SqsConsumerBenchmark
 * </pre>
 * (with {@code ./mvnw -q -pl benchmarks dependency:build-classpath
 * -Dmdep.outputFile=target/classpath.txt}: ElasticMQ's Pekko needs its {@code reference.conf}
 * files merged, which the shaded jar does not do.)
 *
 * <p>System properties: {@code once.bench.stores} (comma-separated, default {@code postgres}; also
 * {@code memory}), {@code once.bench.messages} (per run, default 5000), {@code once.bench.rounds}
 * (measured rounds per mode, default 3), {@code once.bench.batch} (messages gathered per batch,
 * default 500), {@code once.bench.postgres} (a JDBC URL instead of the embedded server). ElasticMQ
 * (an SQS-compatible server) runs in this JVM; PostgreSQL runs embedded (zonky), whose defaults
 * leave {@code fsync} on and set {@code synchronous_commit} off. Receives of 10 are gathered into
 * batches of 500; the handler does nothing, so only the consumer, the SQS calls (receive, delete,
 * visibility) and the store are measured. A run is timed from the consumer's start until the queue
 * is empty: every receive, claim, handler, completion and delete inside.
 */
public final class SqsConsumerBenchmark {

  private static final String PAYLOAD = "{\"orderId\":\"o-000000\",\"amount\":1000,"
      + "\"currency\":\"EUR\",\"customer\":\"cus_42\",\"note\":\"benchmark payload\"}";

  private SqsConsumerBenchmark() {}

  /** One run's measurements. */
  record Run(String store, boolean batch, int messages, double seconds, double claimMicros,
      double completeMicros) {
    double perSecond() {
      return messages / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    int messages = Integer.getInteger("once.bench.messages", 5_000);
    int rounds = Integer.getInteger("once.bench.rounds", 3);
    int batchSize = Integer.getInteger("once.bench.batch", 500);
    List<String> stores = Arrays.asList(System.getProperty("once.bench.stores", "postgres")
        .split(","));

    System.out.printf("once-sqs consumer benchmark: %d messages per run, batches of %d, %d"
        + " rounds, stores %s%n", messages, batchSize, rounds, stores);
    SQSRestServer server = SQSRestServerBuilder.withDynamicPort().withInterface("127.0.0.1")
        .start();
    int port = server.waitUntilStarted().localAddress().getPort();
    List<Run> runs = new ArrayList<>();
    try (SqsClient sqs = SqsClient.builder()
        .endpointOverride(URI.create("http://127.0.0.1:" + port))
        .region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create("bench", "bench")))
        .build()) {
      for (String name : stores) {
        try (StoreUnderTest store = BenchStores.open(name.trim(), "sqs")) {
          // Warm-up (JIT, pools, server): one run of each mode, not reported.
          consume(sqs, messages, batchSize, store, false);
          consume(sqs, messages, batchSize, store, true);
          for (int round = 0; round < rounds; round++) {
            for (boolean batch : new boolean[] {false, true}) {
              Run run = consume(sqs, messages, batchSize, store, batch);
              runs.add(run);
              System.out.printf(Locale.ROOT, "  %-9s %-11s %,10.0f msg/s   claim %7.1f µs/msg"
                  + "   complete %7.1f µs/msg%n", run.store(),
                  run.batch() ? "batch" : "per-message", run.perSecond(), run.claimMicros(),
                  run.completeMicros());
            }
          }
        }
      }
    } finally {
      server.stopAndWait();
    }
    report(runs, batchSize);
    System.exit(0); // the embedded servers leave non-daemon threads behind
  }

  // ---------------------------------------------------------------------------------------------


  /** Fills a fresh queue, consumes it with a fresh consumer (every key new) and times it. */
  static Run consume(SqsClient sqs, int messages, int batchSize, StoreUnderTest store,
      boolean batch) throws Exception {
    String queue = sqs.createQueue(b -> b.queueName("bench-" + UUID.randomUUID()
        .toString().substring(0, 8))).queueUrl();
    fill(sqs, queue, messages);

    Map<String, LongAdder> storeNanos = new ConcurrentHashMap<>();
    Once once = Once.builder(store.store()).listener(new OnceListener() {
      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        storeNanos.computeIfAbsent(operation, o -> new LongAdder()).add(elapsed.toNanos());
      }
    }).build();
    AtomicLong handled = new AtomicLong();
    IdempotentSqsConsumer consumer = IdempotentSqsConsumer
        .builder(once, sqs, queue, (message, attempt) -> handled.incrementAndGet())
        .scope("bench-" + UUID.randomUUID().toString().substring(0, 8))
        .config(IdempotentSqsConsumer.Builder.DEFAULT_CONFIG.toBuilder().batchClaims(batch)
            .build())
        .batchSize(batchSize)
        .waitTime(Duration.ofSeconds(1))
        .visibilityTimeout(Duration.ofMinutes(2))
        .build();
    Thread thread = new Thread(consumer, "bench-consumer");
    long started = System.nanoTime();
    thread.start();
    long deadline = started + Duration.ofMinutes(10).toNanos();
    while (handled.get() < messages || inQueue(sqs, queue) > 0) {
      if (System.nanoTime() > deadline || !thread.isAlive()) {
        throw new IllegalStateException("consumed only " + handled.get() + " of " + messages);
      }
      Thread.sleep(5); // polling for the queue to empty; the handler does not wait
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    consumer.close();
    thread.join();
    sqs.deleteQueue(b -> b.queueUrl(queue));
    if (handled.get() != messages) {
      throw new IllegalStateException("handled " + handled.get() + " of " + messages);
    }
    String claimOp = batch ? "claimAll" : "claim";
    String completeOp = batch ? "completeAll" : "complete";
    return new Run(store.name(), batch, messages, seconds,
        micros(storeNanos.get(claimOp), messages), micros(storeNanos.get(completeOp), messages));
  }

  private static void fill(SqsClient sqs, String queue, int messages) {
    for (int from = 0; from < messages; from += 10) {
      List<SendMessageBatchRequestEntry> entries = new ArrayList<>(10);
      for (int i = from; i < Math.min(messages, from + 10); i++) {
        entries.add(SendMessageBatchRequestEntry.builder().id(Integer.toString(i - from))
            .messageBody(PAYLOAD)
            .messageAttributes(Map.of(IdempotentSqsConsumer.Builder.DEFAULT_KEY_ATTRIBUTE,
                MessageAttributeValue.builder().dataType("String").stringValue("evt-" + i)
                    .build()))
            .build());
      }
      sqs.sendMessageBatch(b -> b.queueUrl(queue).entries(entries));
    }
  }

  private static int inQueue(SqsClient sqs, String queue) {
    Map<QueueAttributeName, String> a = sqs.getQueueAttributes(b -> b.queueUrl(queue)
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE)).attributes();
    return Integer.parseInt(a.getOrDefault(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES, "0"))
        + Integer.parseInt(a.getOrDefault(
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE, "0"));
  }

  private static double micros(LongAdder nanos, int messages) {
    return nanos == null ? 0 : nanos.sum() / 1e3 / messages;
  }

  static void report(List<Run> runs, int batchSize) {
    System.out.println();
    System.out.println("| store | store calls | msg/s (median) | all runs | claim µs/msg |"
        + " complete µs/msg |");
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
            batch ? "claimAll + completeAll per batch of " + batchSize : "one per message",
            median, String.join(" / ", mine.stream()
                .map(r -> String.format(Locale.ROOT, "%,.0f", r.perSecond())).toList()),
            mine.stream().mapToDouble(Run::claimMicros).average().orElse(0),
            mine.stream().mapToDouble(Run::completeMicros).average().orElse(0));
      }
      medians.put(store, pair);
    }
    System.out.println();
    medians.forEach((store, pair) -> System.out.printf(Locale.ROOT,
        "%s: batch / per-message = %.2f×%n", store, pair[1] / pair[0]));
  }
}
