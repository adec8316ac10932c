package dev.once.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.batch.BatchConfig;
import dev.once.benchmarks.BenchStores.StoreUnderTest;
import dev.once.rabbitmq.IdempotentRabbitConsumer;
import dev.once.rabbitmq.Subscription;
import java.nio.charset.StandardCharsets;
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

/**
 * Messages per second through the idempotent RabbitMQ consumer ({@code once-rabbitmq}) with one
 * batch claim and one batch completion per prefetch-sized batch ({@code claimAll} +
 * {@code completeAll}) against one claim and one completion per message
 * ({@code batchClaims(false)}), side by side in one run, per store. Not JMH: each measurement is a
 * whole consumption of a fresh queue by a fresh consumer (and a fresh scope, so every key is new),
 * through the real broker, channel, acks and store.
 *
 * <pre>
 * ./mvnw -q -B -pl benchmarks package -DskipTests
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.RabbitConsumerBenchmark
 * </pre>
 *
 * <p>Needs a RabbitMQ server ({@code once.bench.rabbitmq.host}, default 127.0.0.1;
 * {@code once.bench.rabbitmq.port}, default 5672; guest/guest). System properties:
 * {@code once.bench.stores} (comma-separated, default {@code postgres,redis}; also
 * {@code memory}), {@code once.bench.messages} (per run, default 20000), {@code once.bench.rounds}
 * (measured rounds per mode, default 3), {@code once.bench.prefetch} (default 500: the batch size),
 * {@code once.bench.postgres} (a JDBC URL instead of the embedded server), {@code once.bench.redis}
 * (a {@code redis://} URI instead of a private {@code redis-server} on a free loopback port without
 * persistence). PostgreSQL runs embedded (zonky), whose defaults leave {@code fsync} on and set
 * {@code synchronous_commit} off (a commit does not wait for its WAL flush). The messages are persistent, on a durable queue, with a
 * {@code message-id} (the key); the handler does nothing, so only the consumer, the acks and the
 * store are measured. A run is timed from the first handled message to the last: every claim,
 * handler, completion and ack inside (the last batch's acks aside).
 *
 * <p>To add a store, add a case to {@link #open(String)}.
 */
public final class RabbitConsumerBenchmark {

  private static final byte[] PAYLOAD = ("{\"orderId\":\"o-000000\",\"amount\":1000,"
      + "\"currency\":\"EUR\",\"customer\":\"cus_42\",\"note\":\"benchmark payload\"}")
      .getBytes(StandardCharsets.UTF_8);

  private RabbitConsumerBenchmark() {}

  /** One run's measurements. */
  record Run(String store, boolean batch, int messages, double seconds, double claimMicros,
      double completeMicros, double batchSize) {
    double perSecond() {
      return messages / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    int messages = Integer.getInteger("once.bench.messages", 20_000);
    int rounds = Integer.getInteger("once.bench.rounds", 3);
    int prefetch = Integer.getInteger("once.bench.prefetch", 500);
    List<String> stores = Arrays.asList(System.getProperty("once.bench.stores", "postgres,redis")
        .split(","));
    ConnectionFactory factory = new ConnectionFactory();
    factory.setHost(System.getProperty("once.bench.rabbitmq.host", "127.0.0.1"));
    factory.setPort(Integer.getInteger("once.bench.rabbitmq.port", 5672));
    factory.setUsername("guest");
    factory.setPassword("guest");

    System.out.printf("once-rabbitmq consumer benchmark: %d messages per run, prefetch %d,"
        + " %d rounds, stores %s%n", messages, prefetch, rounds, stores);
    List<Run> runs = new ArrayList<>();
    try (Connection connection = factory.newConnection("once-rabbitmq-bench")) {
      for (String name : stores) {
        try (StoreUnderTest store = BenchStores.open(name.trim(), "rabbit")) {
          // Warm-up (JIT, pools, broker): one run of each mode, not reported.
          consume(connection, store, messages, prefetch, false);
          consume(connection, store, messages, prefetch, true);
          for (int round = 0; round < rounds; round++) {
            for (boolean batch : new boolean[] {false, true}) {
              Run run = consume(connection, store, messages, prefetch, batch);
              runs.add(run);
              System.out.printf(Locale.ROOT, "  %-9s %-11s %,10.0f msg/s   claim %7.1f µs/msg"
                  + "   complete %7.1f µs/msg   %5.0f msg/claim%n", run.store(),
                  run.batch() ? "batch" : "per-message", run.perSecond(), run.claimMicros(),
                  run.completeMicros(), run.batchSize());
            }
          }
        }
      }
    }
    report(runs, prefetch);
    System.exit(0); // the embedded server leaves non-daemon threads behind
  }

  // ---------------------------------------------------------------------------------------------


  /** Fills a fresh queue with {@code messages}, consumes it with a fresh scope, and times it. */
  static Run consume(Connection connection, StoreUnderTest store, int messages, int prefetch,
      boolean batch) throws Exception {
    String queue = "once-bench-" + UUID.randomUUID().toString().substring(0, 8);
    try (Channel admin = connection.createChannel()) {
      admin.queueDeclare(queue, true, false, false, null);
      admin.exchangeDeclare(queue + ".dlx", "direct", false, true, null);
      publish(admin, queue, messages);

      Map<String, LongAdder> storeNanos = new ConcurrentHashMap<>();
      Map<String, LongAdder> storeCalls = new ConcurrentHashMap<>();
      Once once = Once.builder(store.store()).listener(new OnceListener() {
        @Override
        public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
          storeNanos.computeIfAbsent(operation, o -> new LongAdder()).add(elapsed.toNanos());
          storeCalls.computeIfAbsent(operation, o -> new LongAdder()).increment();
        }
      }).build();
      AtomicLong handled = new AtomicLong();
      AtomicLong first = new AtomicLong();
      AtomicLong last = new AtomicLong();
      IdempotentRabbitConsumer consumer = IdempotentRabbitConsumer
          .builder(once, (delivery, attempt) -> {
            long now = System.nanoTime();
            if (handled.getAndIncrement() == 0) {
              first.set(now);
            }
            last.set(now);
          })
          .queue(queue)
          .scope("bench-" + UUID.randomUUID().toString().substring(0, 8))
          .deadLetterExchange(queue + ".dlx")
          .prefetch(prefetch)
          .config(BatchConfig.builder().batchClaims(batch).build())
          .build();
      long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
      try (Subscription subscription = consumer.start(connection)) {
        while (handled.get() < messages) {
          if (System.nanoTime() > deadline || !subscription.isRunning()) {
            throw new IllegalStateException("consumed only " + handled.get() + " of " + messages
                + (subscription.failure() == null ? "" : ": " + subscription.failure()));
          }
          Thread.sleep(5); // polling for completion; the measurement uses the handler's own clock
        }
      } finally {
        admin.queueDelete(queue);
        admin.exchangeDelete(queue + ".dlx");
      }
      double seconds = (last.get() - first.get()) / 1e9;
      String claimOp = batch ? "claimAll" : "claim";
      String completeOp = batch ? "completeAll" : "complete";
      return new Run(store.name(), batch, messages, seconds,
          micros(storeNanos.get(claimOp), messages), micros(storeNanos.get(completeOp), messages),
          storeCalls.containsKey("claimAll") ? (double) messages / storeCalls.get("claimAll").sum()
              : 1);
    }
  }

  /** Persistent messages with a message id each, confirmed in chunks (not measured). */
  private static void publish(Channel channel, String queue, int messages) throws Exception {
    channel.confirmSelect();
    for (int i = 0; i < messages; i++) {
      AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
          .messageId("evt-" + i).deliveryMode(2).contentType("application/json").build();
      channel.basicPublish("", queue, props, PAYLOAD);
      if (i % 1000 == 999) {
        channel.waitForConfirmsOrDie(30_000);
      }
    }
    channel.waitForConfirmsOrDie(30_000);
  }

  private static double micros(LongAdder nanos, int messages) {
    return nanos == null ? 0 : nanos.sum() / 1e3 / messages;
  }

  static void report(List<Run> runs, int prefetch) {
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
            batch ? "claimAll + completeAll per batch of " + prefetch : "one per message", median,
            String.join(" / ", mine.stream()
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
