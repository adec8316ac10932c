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
import java.util.Arrays;
import java.util.Locale;

/**
 * How much of Redis's one thread each operation takes: server time per operation from
 * {@code INFO commandstats} ({@code usec} over the calls), for Once's commands and scripts and for the raw
 * commands the articles use, run one after the other on one connection each. Once Redis is busy
 * this, not the round trip, is what limits throughput: Redis runs scripts and commands one at a
 * time. Unlike throughput, it hardly moves with the machine's other load.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.RedisServerTime [operations] [rounds]
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
      double[][] micros = new double[SIDES.length][rounds];
      for (int round = 0; round < rounds; round++) {
        double[] measured = round(raw, once, operations);
        for (int side = 0; side < SIDES.length; side++) {
          micros[side][round] = measured[side];
        }
      }
      System.out.printf(Locale.ROOT, "Redis server time per operation (%d operations a side and"
              + " round, median of %d rounds, %s)%n", operations, rounds,
          raw.info("server").lines().filter(l -> l.startsWith("redis_version"))
              .findFirst().orElse("redis_version:?"));
      System.out.printf(Locale.ROOT, "%-55s %8s%n", "operation  side", "µs");
      for (int side = 0; side < SIDES.length; side++) {
        System.out.printf(Locale.ROOT, "%-55s %8.1f%n", SIDES[side], median(micros[side]));
      }
    } finally {
      client.shutdown();
      if (server != null) {
        server.close();
      }
    }
  }

  /** One round: server µs per raw new key, Once new key, raw replay, Once replay. */
  private static double[] round(RedisCommands<String, String> raw, Once once, int operations) {
    String run = Long.toString(System.nanoTime(), 36);
    raw.configResetstat();
    for (int i = 0; i < operations; i++) {
      String key = "raw:" + run + ":" + i;
      raw.set(key, "started", SetArgs.Builder.nx().px(30_000));
      raw.set(key, RESPONSE, SetArgs.Builder.px(86_400_000));
    }
    double rawNew = serverMicros(raw) / operations;

    raw.configResetstat();
    for (int i = 0; i < operations; i++) {
      once.execute(IdempotencyKey.of("bench", run + "-" + i), FP, Codecs.utf8(), a -> RESPONSE);
    }
    double onceNew = serverMicros(raw) / operations;

    raw.configResetstat();
    for (int i = 0; i < operations; i++) {
      raw.get("raw:" + run + ":" + i % REPLAY_KEYS);
    }
    double rawReplay = serverMicros(raw) / operations;

    raw.configResetstat();
    for (int i = 0; i < operations; i++) {
      once.execute(IdempotencyKey.of("bench", run + "-" + i % REPLAY_KEYS), FP, Codecs.utf8(),
          a -> {
            throw new IllegalStateException("a replay must not run the logic");
          });
    }
    double onceReplay = serverMicros(raw) / operations;
    raw.flushdb();
    return new double[] {rawNew, onceNew, rawReplay, onceReplay};
  }

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
