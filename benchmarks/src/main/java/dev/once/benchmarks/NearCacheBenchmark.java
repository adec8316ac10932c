package dev.once.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Checkpoint;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Result;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.nearcache.NearCacheStore;
import dev.once.redis.RedisStore;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Replays of completed keys through the near cache ({@code once-near-cache}) against a raw read
 * of the key from the store and against {@link Once} without the cache, side by side in rounds of
 * one run, per store. Not JMH: each round runs every mode for the same time on the same threads,
 * and prints the ratios of that round, so that a machine's drift shows as spread between rounds
 * rather than as a bias between modes.
 *
 * <ul>
 *   <li>{@code raw read}: the cheapest hand-written duplicate check: PostgreSQL {@code SELECT
 *       outcome_body FROM once_… WHERE scope = ? AND tenant = ? AND idem_key = ?} (primary key)
 *       through the same HikariCP pool; Redis {@code GET} of the record's key through one
 *       multiplexed Lettuce connection.
 *   <li>{@code once}: {@code Once.call} over the store: the claim (one round trip), decided and
 *       decoded.
 *   <li>{@code once + near cache}: {@code Once.call} over {@link NearCacheStore} in front of the
 *       same store, every key learned beforehand: no round trip.
 * </ul>
 *
 * Keys are picked at random from {@code once.bench.keys} completed keys (default 10,000); the
 * fingerprint is computed once (a caller hashes its request in every mode but the raw read: about
 * 0.3 µs, see {@code CoreOverheadBenchmark.fingerprintOnly}). Before the stores, it measures what a
 * cached record costs in heap: {@code once.bench.memoryEntries} records (default 100,000) learned
 * by a near cache over a store that keeps nothing itself, heap used after a full GC before and
 * after.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.NearCacheBenchmark
 * </pre>
 *
 * <p>System properties: {@code once.bench.stores} (default {@code postgres,redis}),
 * {@code once.bench.threads} (default 8), {@code once.bench.rounds} (measured rounds, default 5,
 * after one warm-up round), {@code once.bench.seconds} (per mode per round, default 2),
 * {@code once.bench.postgres} (a JDBC URL instead of embedded PostgreSQL, zonky, default
 * durability), {@code once.bench.redis} (a {@code redis://} URI instead of a private
 * {@code redis-server} without persistence on a free loopback port).
 */
public final class NearCacheBenchmark {

  private static final String SCOPE = "bench.nearcache";
  private static final Fingerprint FP = Fingerprint.of(
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}");
  private static final String RESPONSE = "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1000}";
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(24);

  private NearCacheBenchmark() {}

  /** A raw read of key number {@code i}, returning what the store holds for it. */
  interface RawRead {
    Object read(int i) throws Exception;
  }

  /** A store with its raw read and its resources. */
  interface Target extends AutoCloseable {
    String name();

    IdempotencyStore store();

    /** Raw reads of {@code keys}' records (called once, after they were completed). */
    RawRead raw(List<IdempotencyKey> keys) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    int threads = Integer.getInteger("once.bench.threads", 8);
    int rounds = Integer.getInteger("once.bench.rounds", 5);
    double seconds = Double.parseDouble(System.getProperty("once.bench.seconds", "2"));
    int keyCount = Integer.getInteger("once.bench.keys", 10_000);
    int memoryEntries = Integer.getInteger("once.bench.memoryEntries", 100_000);
    List<String> stores = Arrays.asList(System.getProperty("once.bench.stores", "postgres,redis")
        .split(","));
    System.out.printf(Locale.ROOT, "near cache benchmark: %d threads, %d rounds of %.1f s per"
        + " mode, %,d keys, stores %s, %d cores, Java %s%n", threads, rounds, seconds, keyCount,
        stores, Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));

    memory(memoryEntries, 64);
    memory(memoryEntries, 1024);

    List<String> summary = new ArrayList<>();
    for (String name : stores) {
      try (Target target = open(name.trim())) {
        summary.add(run(target, threads, rounds, seconds, keyCount));
      }
    }
    System.out.println();
    summary.forEach(System.out::println);
    System.exit(0); // embedded servers leave non-daemon threads behind
  }

  // --- memory per entry --------------------------------------------------------------------------

  /** Heap per cached record with an outcome body of {@code bodyBytes}. */
  private static void memory(int entries, int bodyBytes) throws InterruptedException {
    byte[] body = new byte[bodyBytes];
    Arrays.fill(body, (byte) 'x');
    long before = usedHeapAfterGc();
    NearCacheStore cache = NearCacheStore.wrap(new KeepsNothing()).maximumSize(entries).build();
    Instant now = Instant.parse("2030-01-01T00:00:00Z");
    for (int i = 0; i < entries; i++) {
      // Key text as a caller's would be: fresh strings per request, 36-character UUID-like ids.
      IdempotencyKey key = IdempotencyKey.of(SCOPE, String.format("%08d-0000-4000-8000-%012d", i, i));
      Claim.Acquired a = (Claim.Acquired) cache.claim(new ClaimRequest(key, Fingerprint.of(
          "request " + i), now, LEASE, RETENTION));
      cache.complete(key, a.token(), Outcome.success("application/json", body), now, RETENTION);
    }
    long held = cache.cachedRecords();
    long after = usedHeapAfterGc();
    double perEntry = (double) (after - before) / held;
    int keyChars = SCOPE.length() + 36;
    System.out.printf(Locale.ROOT, "memory: %,d records with %,d-byte outcomes and %d-character"
        + " keys: %,.0f bytes per record (%,.0f besides body and key text), %,.1f MiB in all%n",
        held, bodyBytes, keyChars, perEntry, perEntry - bodyBytes - keyChars,
        (after - before) / 1048576.0);
    if (cache.cachedRecords() != held) {
      throw new IllegalStateException("the cache changed while measured");
    }
  }

  private static long usedHeapAfterGc() throws InterruptedException {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(100);
      used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  /** A store that acquires every claim and keeps nothing: only the cache holds the records. */
  private static final class KeepsNothing implements IdempotencyStore {
    public Claim claim(ClaimRequest r) {
      return new Claim.Acquired(1, false, 1, null, r.leaseUntil());
    }

    public void complete(IdempotencyKey k, long t, Outcome o, Instant now, Duration retention) {}

    public void fail(IdempotencyKey k, long t, String e, Instant now, Duration retention) {}

    public Instant extend(IdempotencyKey k, long t, Instant now, Duration lease) {
      return now.plus(lease);
    }

    public void checkpoint(IdempotencyKey k, long t, Checkpoint c, Instant now) {}

    public Optional<IdempotencyRecord> find(IdempotencyKey k) {
      return Optional.empty();
    }

    public int purgeExpired(Instant now, int limit) {
      return 0;
    }

    public int reapExpiredLeases(Instant now, int limit) {
      return 0;
    }
  }

  // --- replays -------------------------------------------------------------------------------------

  private static String run(Target target, int threads, int rounds, double seconds, int keyCount)
      throws Exception {
    IdempotencyStore store = target.store();
    NearCacheStore cache = NearCacheStore.wrap(store).maximumSize(Math.max(keyCount, 1)).build();
    Once plain = Once.builder(store).lease(LEASE).retention(RETENTION).build();
    Once near = Once.builder(cache).lease(LEASE).retention(RETENTION).build();
    String run = UUID.randomUUID().toString().substring(0, 8);
    List<IdempotencyKey> keys = new ArrayList<>(keyCount);
    for (int i = 0; i < keyCount; i++) {
      keys.add(IdempotencyKey.of(SCOPE, "order-" + run + "-" + i));
    }
    // Completed through the cache (so it learns them), on all threads.
    parallel(threads, t -> {
      for (int i = t; i < keyCount; i += threads) {
        near.execute(keys.get(i), FP, Codecs.utf8(), a -> RESPONSE);
      }
    });
    if (cache.cachedRecords() != keyCount) {
      throw new IllegalStateException("the cache holds " + cache.cachedRecords() + " of "
          + keyCount + " records");
    }
    RawRead raw = target.raw(keys);
    if (raw.read(0) == null) {
      throw new IllegalStateException("the raw read found nothing");
    }
    Op rawOp = i -> raw.read(i);
    Op onceOp = i -> replay(plain, keys.get(i));
    Op nearOp = i -> replay(near, keys.get(i));

    System.out.printf(Locale.ROOT, "%n%s, %d threads (ops/s; ratios of the same round)%n",
        target.name(), threads);
    System.out.printf(Locale.ROOT, "%-8s %14s %14s %18s %12s %12s%n", "round", "raw read",
        "once", "once + near cache", "near/raw", "near/once");
    double[] nearOverRaw = new double[rounds];
    double[] nearOverOnce = new double[rounds];
    for (int round = -1; round < rounds; round++) {
      double r = measure(threads, seconds, keyCount, rawOp);
      double o = measure(threads, seconds, keyCount, onceOp);
      double n = measure(threads, seconds, keyCount, nearOp);
      System.out.printf(Locale.ROOT, "%-8s %,14.0f %,14.0f %,18.0f %11.1fx %11.1fx%n",
          round < 0 ? "warm-up" : Integer.toString(round + 1), r, o, n, n / r, n / o);
      if (round >= 0) {
        nearOverRaw[round] = n / r;
        nearOverOnce[round] = n / o;
      }
    }
    Arrays.sort(nearOverRaw);
    Arrays.sort(nearOverOnce);
    return String.format(Locale.ROOT, "%s: near cache / raw read %.1fx (min %.1fx, max %.1fx),"
        + " near cache / once %.1fx (min %.1fx, max %.1fx), median of %d rounds", target.name(),
        nearOverRaw[rounds / 2], nearOverRaw[0], nearOverRaw[rounds - 1],
        nearOverOnce[rounds / 2], nearOverOnce[0], nearOverOnce[rounds - 1], rounds);
  }

  private static String replay(Once once, IdempotencyKey key) {
    Result<String> r = once.call(key, FP, Codecs.utf8(), a -> {
      throw new IllegalStateException("a replay must not run");
    });
    if (!r.replayed()) {
      throw new IllegalStateException("not a replay: " + key);
    }
    return r.value();
  }

  /** One operation on key number {@code i}. */
  interface Op {
    Object apply(int i) throws Exception;
  }

  interface PerThread {
    void run(int thread) throws Exception;
  }

  /** Operations per second of {@code op} on {@code threads} threads for {@code seconds}. */
  private static double measure(int threads, double seconds, int keyCount, Op op)
      throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    long[] counts = new long[threads];
    CountDownLatch started = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<?>> done = new ArrayList<>();
    try {
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          long x = 0x9E3779B97F4A7C15L * (thread + 1);
          started.countDown();
          go.await();
          long n = 0;
          while (!stop.get()) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            if (op.apply((int) Long.remainderUnsigned(x, keyCount)) == null) {
              throw new IllegalStateException("no answer");
            }
            n++;
          }
          counts[thread] = n;
          return null;
        }));
      }
      started.await();
      long begin = System.nanoTime();
      go.countDown();
      Thread.sleep((long) (seconds * 1000));
      stop.set(true);
      for (Future<?> f : done) {
        f.get();
      }
      double elapsed = (System.nanoTime() - begin) / 1e9;
      return Arrays.stream(counts).sum() / elapsed;
    } finally {
      pool.shutdownNow();
    }
  }

  private static void parallel(int threads, PerThread work) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          work.run(thread);
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  // --- stores --------------------------------------------------------------------------------------

  static Target open(String name) throws Exception {
    switch (name) {
      case "postgres":
        return postgres();
      case "redis":
        return redis();
      default:
        throw new IllegalArgumentException("unknown store " + name + " (postgres, redis)");
    }
  }

  private static Target postgres() throws Exception {
    String url = System.getProperty("once.bench.postgres");
    EmbeddedPostgres embedded = url == null || url.isBlank()
        ? EmbeddedPostgres.builder().start() : null;
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(embedded != null ? embedded.getJdbcUrl("postgres", "postgres") : url);
    config.setMaximumPoolSize(16);
    HikariDataSource pool = new HikariDataSource(config);
    String table = "once_nearcache_bench_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcStore store = JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL).table(table).build();
    store.createSchema();
    String select = "SELECT outcome_body FROM " + table
        + " WHERE scope = ? AND tenant = ? AND idem_key = ?";
    return new Target() {
      public String name() {
        return "PostgreSQL";
      }

      public IdempotencyStore store() {
        return store;
      }

      public RawRead raw(List<IdempotencyKey> keys) {
        return i -> {
          IdempotencyKey k = keys.get(i);
          try (Connection c = pool.getConnection();
              PreparedStatement s = c.prepareStatement(select)) {
            s.setString(1, k.scope());
            s.setString(2, k.tenant());
            s.setString(3, k.key());
            try (ResultSet rs = s.executeQuery()) {
              return rs.next() ? rs.getBytes(1) : null;
            }
          }
        };
      }

      public void close() throws Exception {
        try (Connection c = pool.getConnection()) {
          c.createStatement().execute("DROP TABLE IF EXISTS " + table);
        } catch (SQLException e) {
          // best effort
        }
        pool.close();
        if (embedded != null) {
          embedded.close();
        }
      }
    };
  }

  private static Target redis() throws Exception {
    String uri = System.getProperty("once.bench.redis");
    PrivateRedisServer server = null;
    if (uri == null || uri.isBlank()) {
      server = PrivateRedisServer.start();
      uri = server.uri();
    }
    PrivateRedisServer own = server;
    RedisClient client = RedisClient.create(uri);
    StatefulRedisConnection<byte[], byte[]> connection = client.connect(ByteArrayCodec.INSTANCE);
    RedisStore store = RedisStore.builder(uri).commandTimeout(Duration.ofSeconds(10)).build();
    return new Target() {
      public String name() {
        return "Redis";
      }

      public IdempotencyStore store() {
        return store;
      }

      public RawRead raw(List<IdempotencyKey> keys) {
        // The record keys as the store lays them out: "prefix scope tenant key".
        byte[][] recordKeys = new byte[keys.size()][];
        for (int i = 0; i < recordKeys.length; i++) {
          IdempotencyKey k = keys.get(i);
          recordKeys[i] = (store.keyPrefix() + ' ' + k.scope() + ' ' + k.tenant() + ' ' + k.key())
              .getBytes(StandardCharsets.US_ASCII);
        }
        RedisCommands<byte[], byte[]> sync = connection.sync();
        return i -> sync.get(recordKeys[i]);
      }

      public void close() throws Exception {
        store.close();
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        if (own != null) {
          own.close();
        }
      }
    };
  }

}
