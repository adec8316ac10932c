package dev.once.benchmarks;

import static dev.once.benchmarks.RedisBenchmark.FP;
import static dev.once.benchmarks.RedisBenchmark.REPLAY_KEYS;
import static dev.once.benchmarks.RedisBenchmark.RESPONSE;

import dev.once.Codecs;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.redis.RedisStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Locale;

/**
 * How much of Redis's one thread each operation takes: server time per operation from
 * {@code INFO commandstats} ({@code usec} over the calls), for Once's commands and scripts and
 * for the raw commands the articles use, run one after the other on one connection each. Once
 * Redis is busy this, not the round trip, is what limits throughput: Redis runs scripts and
 * commands one at a time. Unlike throughput, it hardly moves with the machine's other load.
 *
 * <p>Beside it, the client's side of the same operations: this JVM's CPU time per operation (the
 * calling thread and Lettuce's, one caller at a time, so nothing waits on a lock) and the bytes
 * the calling thread allocates per operation. Where the machine has two cores that both sides
 * share, the client's CPU per operation is what bounds throughput at a handful of callers.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.RedisServerTime \
 *     [operations] [rounds]
 * </pre>
 *
 * Each round measures the four sides one after the other; the figures are the medians over the
 * rounds (a descheduled Redis thread inflates single rounds on a shared machine).
 *
 * It starts its own {@code redis-server}, or uses {@code -Donce.bench.redis=redis://…} (whose
 * statistics it resets).
 */
public final class RedisServerTime {

  private static final String[] SIDES = {"new key    raw: SET NX PX + SET PX",
      "new key    Once: SET NX GET PX + complete script", "replay     raw: GET",
      "replay     Once: SET NX GET PX"};

  private RedisServerTime() {}

  public static void main(String[] args) throws Exception {
    int operations = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    String uri = System.getProperty("once.bench.redis");
    PrivateRedisServer server = null;
    if (uri == null || uri.isBlank()) {
      server = PrivateRedisServer.start();
      uri = server.uri();
    }
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> connection = client.connect();
         RedisStore store = RedisStore.builder(uri).build()) {
      RedisCommands<String, String> raw = connection.sync();
      Once once = Once.builder(store).build();
      round(raw, once, operations); // warm-up: the JIT compiles both sides
      double[][] micros = new double[SIDES.length][rounds];
      double[][] clientMicros = new double[SIDES.length][rounds];
      double[][] clientBytes = new double[SIDES.length][rounds];
      for (int round = 0; round < rounds; round++) {
        double[][] measured = round(raw, once, operations);
        for (int side = 0; side < SIDES.length; side++) {
          micros[side][round] = measured[0][side];
          clientMicros[side][round] = measured[1][side];
          clientBytes[side][round] = measured[2][side];
        }
      }
      System.out.printf(Locale.ROOT, "Redis server time per operation (%d operations a side and"
              + " round, median of %d rounds, %s)%n", operations, rounds,
          raw.info("server").lines().filter(l -> l.startsWith("redis_version"))
              .findFirst().orElse("redis_version:?"));
      System.out.printf(Locale.ROOT, "%-55s %10s %10s %12s%n", "operation  side", "server µs",
          "client µs", "client B");
      for (int side = 0; side < SIDES.length; side++) {
        System.out.printf(Locale.ROOT, "%-55s %10.1f %10.1f %12.0f%n", SIDES[side],
            median(micros[side]), median(clientMicros[side]), median(clientBytes[side]));
      }
    } finally {
      client.shutdown();
      if (server != null) {
        server.close();
      }
    }
  }

  /**
   * One round: per raw new key, Once new key, raw replay and Once replay, the server's µs, this
   * JVM's CPU µs and the calling thread's allocated bytes.
   */
  private static double[][] round(RedisCommands<String, String> raw, Once once, int operations) {
    String run = Long.toString(System.nanoTime(), 36);
    double[][] measured = new double[3][SIDES.length];
    measure(raw, operations, measured, 0, () -> {
      for (int i = 0; i < operations; i++) {
        String key = "raw:" + run + ":" + i;
        raw.set(key, "started", SetArgs.Builder.nx().px(30_000));
        raw.set(key, RESPONSE, SetArgs.Builder.px(86_400_000));
      }
    });
    measure(raw, operations, measured, 1, () -> {
      for (int i = 0; i < operations; i++) {
        once.execute(IdempotencyKey.of("bench", run + "-" + i), FP, Codecs.utf8(), a -> RESPONSE);
      }
    });
    measure(raw, operations, measured, 2, () -> {
      for (int i = 0; i < operations; i++) {
        raw.get("raw:" + run + ":" + i % REPLAY_KEYS);
      }
    });
    measure(raw, operations, measured, 3, () -> {
      for (int i = 0; i < operations; i++) {
        once.execute(IdempotencyKey.of("bench", run + "-" + i % REPLAY_KEYS), FP, Codecs.utf8(),
            a -> {
              throw new IllegalStateException("a replay must not run the logic");
            });
      }
    });
    raw.flushdb();
    return measured;
  }

  private static void measure(RedisCommands<String, String> raw, int operations,
      double[][] measured, int side, Runnable work) {
    raw.configResetstat();
    long cpu = PROCESS.getProcessCpuTime();
    long allocated = THREADS.getCurrentThreadAllocatedBytes();
    work.run();
    measured[2][side] =
        (double) (THREADS.getCurrentThreadAllocatedBytes() - allocated) / operations;
    measured[1][side] = (PROCESS.getProcessCpuTime() - cpu) / 1000.0 / operations;
    measured[0][side] = serverMicros(raw) / operations;
  }

  private static final com.sun.management.OperatingSystemMXBean PROCESS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** Total server microseconds of every command since the last reset but INFO and CONFIG. */
  private static double serverMicros(RedisCommands<String, String> raw) {
    return raw.info("commandstats").lines()
        .filter(l -> l.startsWith("cmdstat_") && !l.startsWith("cmdstat_info")
            && !l.startsWith("cmdstat_config"))
        .mapToDouble(l -> Double.parseDouble(l.replaceAll(".*[:,]usec=([0-9]+),.*", "$1")))
        .sum();
  }

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
}
