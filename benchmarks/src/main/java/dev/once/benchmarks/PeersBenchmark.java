package dev.once.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Result;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.RedisStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.integration.redis.metadata.RedisMetadataStore;

/**
 * Once next to other projects' idempotency stores and to the raw statements, on the same database
 * through the same driver, side by side in interleaved rounds of one run. Not JMH: each round runs
 * every side for the same time on the same threads (the side that goes first rotates from round to
 * round) and prints the ratios of that round, so that the machine's drift shows as spread between
 * rounds rather than as a bias between sides.
 *
 * <p>Two workloads: <b>new keys</b> (every operation a key never seen) and <b>duplicates</b>
 * (every operation one of {@code once.bench.keys} keys recorded beforehand, picked at random).
 * Each side does what its documentation says to do with a key:
 *
 * <p><b>PostgreSQL</b> (one HikariCP pool of {@code once.bench.pool} connections, default 8, shared
 * by every side; pgjdbc):
 *
 * <ul>
 *   <li>{@code once}: {@link Once#call} over {@link JdbcStore} (lease mode) with coalescing off
 *       ({@code coalesceStoreCalls(0)}): claim, empty logic, completion under the fencing token; a
 *       duplicate is answered with the stored outcome.
 *   <li>{@code once c=n}: the same with {@link Once.Builder#coalesceStoreCalls coalesceStoreCalls(n)};
 *       {@code once c=8}: callers beyond 8 share batch calls, which is Once as built by default
 *       on PostgreSQL over this benchmark's pool of 8 (the JDBC store suggests the pool's size,
 *       ADR 0014).
 *   <li>{@code once by hand} (new keys): the two statements {@code once} sends for a new key,
 *       {@code JdbcStore}'s claim insert and its completion under the token, sent by hand through
 *       the same pool into Once's table, each on a connection of its own as {@code JdbcStore}
 *       borrows them: what Once would reach if its own code above the JDBC calls cost nothing,
 *       so {@code once} against it is the cost of that code, and it against the raw pair the
 *       cost of what Once stores and of borrowing twice.
 *   <li>{@code raw insert}: one {@code INSERT … ON CONFLICT DO NOTHING} (autocommit) into the
 *       articles' table; on a duplicate it inserts nothing.
 *   <li>{@code raw insert+update}: that insert, then {@code UPDATE … SET status='completed',
 *       response_body=…} (what Once replaces); on a duplicate, the insert, then a {@code SELECT} of
 *       the stored response.
 *   <li>{@code camel}: Apache Camel's {@code JdbcMessageIdRepository.add} (camel-sql): in one
 *       Spring transaction, {@code SELECT COUNT(*)} then {@code INSERT}.
 *   <li>{@code spring-int}: Spring Integration's {@code JdbcMetadataStore.putIfAbsent}: {@code
 *       INSERT … SELECT … HAVING COUNT(*)=0 ON CONFLICT DO NOTHING}, then on a duplicate a {@code
 *       SELECT} of the value; used as a plain object, so each statement commits on its own (in a
 *       context with transaction management its {@code @Transactional} would add a transaction).
 * </ul>
 *
 * <p><b>Redis</b> (a private {@code redis-server} without persistence; Lettuce):
 *
 * <ul>
 *   <li>{@code once} and {@code once c=n}: {@link RedisStore} over one {@link RedisClient}.
 *   <li>{@code raw SET NX PX} (new keys): {@code SET key started NX PX 30000}, one command on one
 *       multiplexed connection of the same client.
 *   <li>{@code raw GET} (duplicates): {@code GET key}.
 *   <li>{@code spring-int}: Spring Integration's {@code RedisMetadataStore.putIfAbsent} over
 *       spring-data-redis' {@code LettuceConnectionFactory} (its defaults: one shared native
 *       connection): {@code HSETNX}, then on a duplicate {@code HGET}.
 * </ul>
 *
 * <p>Each round also prints the CPU time per operation of this JVM and of the server's processes
 * (the embedded PostgreSQL's postmaster and its children; the private {@code redis-server}), as
 * total (JVM + server) microseconds, and on PostgreSQL the WAL bytes per operation
 * ({@code pg_current_wal_insert_lsn()} around each side; the summary gives Once's WAL per operation as a
 * ratio to each peer's). The PostgreSQL banner states {@code fsync} and {@code synchronous_commit}. Other tenants of the machine do not count in it, so on a
 * shared machine its ratios are steadier than those of throughput, and once the machine's cores
 * are busy (64 callers on 2 cores) throughput follows its inverse.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.PeersBenchmark
 * </pre>
 *
 * <p>System properties: {@code once.bench.stores} (default {@code postgres,redis}),
 * {@code once.bench.threads} (default {@code 1,8,64}), {@code once.bench.workloads} (default
 * {@code new,dup}), {@code once.bench.coalesce} (the n of the coalesced sides, default
 * {@code 2,4,8}; with one thread only the largest), {@code once.bench.rounds} (measured rounds
 * after one warm-up round, default 3), {@code once.bench.seconds} (per side per round, default 2),
 * {@code once.bench.keys} (duplicates' keys per side, default 2,000), {@code once.bench.pool}
 * (default 8), {@code once.bench.postgres} (a JDBC URL instead of an embedded PostgreSQL, zonky:
 * {@code fsync} on, {@code synchronous_commit} off).
 */
public final class PeersBenchmark {

  private static final String SCOPE = "bench.peers";
  private static final byte[] PAYLOAD =
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}".getBytes(StandardCharsets.UTF_8);
  private static final Fingerprint FP = Fingerprint.of(PAYLOAD);
  private static final String RESPONSE = "{\"id\":\"ch_1\"}";
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(24);

  private PeersBenchmark() {}

  /** One operation of a side: thread {@code thread}'s {@code n}-th new key, or duplicate {@code n}. */
  interface Op {
    void apply(int thread, long n) throws Exception;
  }

  /** One side of a workload: its name, whether it is Once, and its operation. */
  record Side(String name, boolean once, Op op) {}

  /**
   * The side that sends the statements a Once call makes, by hand, with none of Once's code above
   * the JDBC calls: on PostgreSQL, what Once could reach if that code cost nothing.
   */
  static final String BY_HAND = "once by hand";

  /** A store and the sides measured on it. */
  interface Target extends AutoCloseable {
    String name();

    /** The sides for new keys with {@code threads} threads. */
    List<Side> newKeys(int threads, List<Integer> coalesce);

    /** The sides for duplicates; records {@code keys} keys per side first. */
    List<Side> duplicates(int threads, List<Integer> coalesce, int keys) throws Exception;

    /** The server's processes, whose CPU time counts with this JVM's. */
    List<ProcessHandle> server() throws Exception;

    /** The server's write-ahead log position in bytes, or -1 where it has none (Redis). */
    default long walPosition() throws Exception {
      return -1;
    }
  }

  public static void main(String[] args) throws Exception {
    List<Integer> threadCounts = ints(System.getProperty("once.bench.threads", "1,8,64"));
    List<Integer> coalesce = ints(System.getProperty("once.bench.coalesce", "2,4,8"));
    List<String> workloads = strings(System.getProperty("once.bench.workloads", "new,dup"));
    List<String> stores = strings(System.getProperty("once.bench.stores", "postgres,redis"));
    int rounds = Integer.getInteger("once.bench.rounds", 3);
    double seconds = Double.parseDouble(System.getProperty("once.bench.seconds", "2"));
    int keys = Integer.getInteger("once.bench.keys", 2_000);
    int pool = Integer.getInteger("once.bench.pool", 8);
    System.out.printf(Locale.ROOT, "peers benchmark: stores %s, threads %s, workloads %s, coalesce"
        + " %s, %d rounds of %.1f s a side (after a warm-up round), %,d duplicate keys a side,"
        + " pool %d, %d cores, Java %s, load %s%n", stores, threadCounts, workloads, coalesce,
        rounds, seconds, keys, pool, Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"), load());

    List<String> summary = new ArrayList<>();
    for (String store : stores) {
      try (Target target = open(store, pool)) {
        for (int threads : threadCounts) {
          List<Integer> c = threads == 1 ? List.of(coalesce.get(coalesce.size() - 1)) : coalesce;
          for (String workload : workloads) {
            List<Side> sides = workload.equals("new") ? target.newKeys(threads, c)
                : target.duplicates(threads, c, keys);
            String title = target.name() + ", " + threads + " thread" + (threads == 1 ? "" : "s")
                + ", " + (workload.equals("new") ? "new keys" : "duplicates");
            summary.addAll(run(title, sides, threads, rounds, seconds, target));
          }
        }
      }
    }
    System.out.println();
    System.out.println("Summary: Once / peer, median of the per-round ratios [min, max]");
    summary.forEach(System.out::println);
    System.exit(0); // embedded servers and client libraries leave non-daemon threads behind
  }

  // --- measuring -----------------------------------------------------------------------------------

  private static List<String> run(String title, List<Side> sides, int threads, int rounds,
      double seconds, Target target) throws Exception {
    List<ProcessHandle> server = target.server();
    System.out.printf(Locale.ROOT, "%n%s (ops/s; then CPU µs per op: total (this JVM + the"
        + " server)%s)%n%-8s %-6s", title, target.walPosition() < 0 ? ""
        : ", and WAL bytes per op", "round", "load");
    for (Side s : sides) {
      System.out.printf(Locale.ROOT, " %17s", s.name());
    }
    System.out.println();
    double[][] scores = new double[rounds][sides.size()];
    double[][] cpu = new double[rounds][sides.size()];
    double[][] wal = new double[rounds][sides.size()];
    long[][] next = new long[sides.size()][threads];
    for (int round = -1; round < rounds; round++) {
      String loadNow = load();
      double[] row = new double[sides.size()];
      double[] cpuRow = new double[sides.size()];
      double[] walRow = new double[sides.size()];
      String[] cpuText = new String[sides.size()];
      int first = Math.floorMod(round, sides.size());
      for (int k = 0; k < sides.size(); k++) {
        int i = (first + k) % sides.size();
        double[] m = measure(threads, seconds, sides.get(i).op(), next[i], server, target);
        row[i] = m[0];
        cpuRow[i] = m[1];
        walRow[i] = m[4];
        cpuText[i] = String.format(Locale.ROOT, "%.0f (%.0f+%.0f)", m[1], m[2], m[3])
            + (m[4] < 0 ? "" : String.format(Locale.ROOT, " %.0fB", m[4]));
      }
      String label = round < 0 ? "warm-up" : Integer.toString(round + 1);
      System.out.printf(Locale.ROOT, "%-8s %-6s", label, loadNow);
      for (double r : row) {
        System.out.printf(Locale.ROOT, " %,17.0f", r);
      }
      System.out.printf(Locale.ROOT, "%n%-8s %-6s", "  µs/op", "");
      for (String c : cpuText) {
        System.out.printf(Locale.ROOT, " %17s", c);
      }
      System.out.println();
      if (round >= 0) {
        scores[round] = row;
        cpu[round] = cpuRow;
        wal[round] = walRow;
      }
    }
    // Per-round ratios of every Once side against every other side.
    List<String> lines = new ArrayList<>();
    for (int o = 0; o < sides.size(); o++) {
      if (!sides.get(o).once()) {
        continue;
      }
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s: %-9s", title,
          sides.get(o).name()));
      for (int p = 0; p < sides.size(); p++) {
        // Once sides against the peers, and against Once's own statements sent by hand.
        if (p == o || (sides.get(p).once() && !sides.get(p).name().equals(BY_HAND))) {
          continue;
        }
        double[] ratios = new double[rounds];
        StringBuilder perRound = new StringBuilder();
        for (int r = 0; r < rounds; r++) {
          ratios[r] = scores[r][o] / scores[r][p];
          perRound.append(r == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.2f", ratios[r]));
        }
        double[] sorted = ratios.clone();
        Arrays.sort(sorted);
        double[] cpuRatios = new double[rounds];
        for (int r = 0; r < rounds; r++) {
          cpuRatios[r] = cpu[r][o] / cpu[r][p];
        }
        Arrays.sort(cpuRatios);
        line.append(String.format(Locale.ROOT, " | / %s %.2fx [%.2f, %.2f] (%s), CPU/op %.2fx",
            sides.get(p).name(), sorted[rounds / 2], sorted[0], sorted[rounds - 1], perRound,
            cpuRatios[rounds / 2]));
        if (wal[0][o] >= 0 && wal[0][p] > 0) {
          double[] walRatios = new double[rounds];
          for (int r = 0; r < rounds; r++) {
            walRatios[r] = wal[r][o] / wal[r][p];
          }
          Arrays.sort(walRatios);
          line.append(String.format(Locale.ROOT, ", WAL/op %.2fx", walRatios[rounds / 2]));
        }
      }
      System.out.println(line);
      lines.add(line.toString());
    }
    return lines;
  }

  /**
   * Operations per second of {@code op} on {@code threads} threads for {@code seconds}; the CPU
   * time per operation of this JVM and the {@code server}'s processes together, this JVM's and the
   * server's (other tenants of the machine do not count in it); and the write-ahead log bytes per
   * operation, or -1 where the target has no log.
   */
  private static double[] measure(int threads, double seconds, Op op, long[] next,
      List<ProcessHandle> server, Target target) throws Exception {
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
          started.countDown();
          go.await();
          long n = 0;
          while (!stop.get()) {
            // next[thread] numbers the thread's operations across rounds (new keys never repeat).
            op.apply(thread, next[thread]++);
            n++;
          }
          counts[thread] = n;
          return null;
        }));
      }
      started.await();
      long jvmBefore = cpu(ProcessHandle.current());
      long serverBefore = cpuNanos(server);
      long walBefore = target.walPosition();
      long begin = System.nanoTime();
      go.countDown();
      Thread.sleep((long) (seconds * 1000));
      stop.set(true);
      for (Future<?> f : done) {
        f.get();
      }
      double elapsed = (System.nanoTime() - begin) / 1e9;
      long ops = Arrays.stream(counts).sum();
      double jvm = (cpu(ProcessHandle.current()) - jvmBefore) / 1e3 / ops;
      double serverCpu = (cpuNanos(server) - serverBefore) / 1e3 / ops;
      double walPerOp = walBefore < 0 ? -1 : (double) (target.walPosition() - walBefore) / ops;
      return new double[] {ops / elapsed, jvm + serverCpu, jvm, serverCpu, walPerOp};
    } finally {
      pool.shutdownNow();
    }
  }

  private static void parallel(int threads, int count, Op op) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          for (int i = thread; i < count; i += threads) {
            op.apply(thread, i);
          }
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

  /** A pseudo-random index below {@code keys} for thread {@code t}'s {@code n}-th operation. */
  static int pick(int t, long n, int keys) {
    long x = (n + ((long) t << 40)) * 0x9E3779B97F4A7C15L;
    x ^= x >>> 31;
    x *= 0xBF58476D1CE4E5B9L;
    x ^= x >>> 29;
    return (int) Long.remainderUnsigned(x, keys);
  }

  /** CPU time so far of {@code server}'s processes (gone ones no longer count). */
  private static long cpuNanos(List<ProcessHandle> server) {
    long total = 0;
    for (ProcessHandle p : server) {
      total += cpu(p);
    }
    return total;
  }

  private static long cpu(ProcessHandle p) {
    return p.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
  }

  private static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    } catch (Exception e) {
      return "?";
    }
  }

  private static List<Integer> ints(String csv) {
    return strings(csv).stream().map(Integer::parseInt).collect(Collectors.toList());
  }

  private static List<String> strings(String csv) {
    return Arrays.stream(csv.split(",")).map(String::trim).filter(s -> !s.isEmpty())
        .collect(Collectors.toList());
  }

  private static Once once(dev.once.spi.IdempotencyStore store, int coalesce) {
    return Once.builder(store).lease(LEASE).retention(RETENTION).coalesceStoreCalls(coalesce)
        .build();
  }

  private static void newKey(Once once, IdempotencyKey key) {
    Result<String> r = once.call(key, FP, Codecs.utf8(), a -> RESPONSE);
    if (r.replayed()) {
      throw new IllegalStateException("benchmark keys must be new: " + key);
    }
  }

  private static void replay(Once once, IdempotencyKey key) {
    Result<String> r = once.call(key, FP, Codecs.utf8(), a -> {
      throw new IllegalStateException("a duplicate must not run");
    });
    if (!r.replayed()) {
      throw new IllegalStateException("not a replay: " + key);
    }
  }

  /** The Once sides: coalescing off, then one per coalescing setting. */
  private static Map<String, Once> onceSides(dev.once.spi.IdempotencyStore store,
      List<Integer> coalesce) {
    Map<String, Once> sides = new LinkedHashMap<>();
    sides.put("once", once(store, 0));
    for (int n : coalesce) {
      sides.put("once c=" + n, once(store, n));
    }
    return sides;
  }

  static Target open(String name, int pool) throws Exception {
    switch (name) {
      case "postgres":
        return new Postgres(pool);
      case "redis":
        return new Redis();
      default:
        throw new IllegalArgumentException("unknown store " + name + " (postgres, redis)");
    }
  }

  // --- PostgreSQL ----------------------------------------------------------------------------------

  private static final class Postgres implements Target {
    private static final String RAW_TABLE = "peers_raw_idempotency_keys";
    private static final String INSERT_RAW = "INSERT INTO " + RAW_TABLE
        + " (idempotency_key, status, request_hash, created_at, updated_at)"
        + " VALUES (?, 'started', ?, now(), now()) ON CONFLICT DO NOTHING";
    private static final String UPDATE_RAW = "UPDATE " + RAW_TABLE
        + " SET status = 'completed', response_body = ?, updated_at = now()"
        + " WHERE idempotency_key = ?";
    private static final String SELECT_RAW = "SELECT status, response_body FROM " + RAW_TABLE
        + " WHERE idempotency_key = ?";
    private static final byte[] HASH = FP.digest();
    private static final byte[] RESPONSE_BYTES = RESPONSE.getBytes(StandardCharsets.UTF_8);

    private final EmbeddedPostgres embedded;
    private final HikariDataSource pool;
    private final JdbcStore store;
    private final String table;
    /** JdbcStore's claim insert and completion on PostgreSQL, for {@link #onceByHand}. */
    private final String onceInsert;
    private final String onceComplete;
    private final JdbcMessageIdRepository camel;
    private final JdbcMetadataStore spring;
    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private int generation;

    Postgres(int poolSize) throws Exception {
      String url = System.getProperty("once.bench.postgres");
      embedded = url == null || url.isBlank() ? EmbeddedPostgres.builder().start() : null;
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(embedded != null ? embedded.getJdbcUrl("postgres", "postgres") : url);
      config.setMaximumPoolSize(poolSize);
      pool = new HikariDataSource(config);
      table = "once_peers_" + run;
      store = JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL).table(table).build();
      store.createSchema();
      onceInsert = "INSERT INTO " + table + " (scope, tenant, idem_key, status, fingerprint,"
          + " token, lease_until, attempts, created_at, updated_at, expires_at, claim_id,"
          + " purge_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
          + " ON CONFLICT (scope, tenant, idem_key) DO NOTHING";
      onceComplete = "UPDATE " + table + " SET status = 'COMPLETED', outcome_kind = ?,"
          + " outcome_media_type = ?, outcome_body = ?, updated_at = ?, expires_at = ?,"
          + " purge_after = LEAST(purge_after, ?) WHERE scope = ? AND tenant = ?"
          + " AND idem_key = ? AND token = ? AND status = 'IN_PROGRESS'";
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        // The articles' table: key as primary key, status, response cached as bytes.
        s.execute("CREATE TABLE IF NOT EXISTS " + RAW_TABLE + " (idempotency_key text PRIMARY KEY,"
            + " status text NOT NULL, request_hash bytea, response_body bytea,"
            + " created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)");
        // Spring Integration's schema-postgresql.sql, metadata store part.
        s.execute("CREATE TABLE IF NOT EXISTS INT_METADATA_STORE (METADATA_KEY VARCHAR(255) NOT NULL,"
            + " METADATA_VALUE VARCHAR(4000), REGION VARCHAR(100) NOT NULL,"
            + " constraint INT_METADATA_STORE_PK primary key (METADATA_KEY, REGION))");
        // Camel's own DDL (JdbcMessageIdRepository.DEFAULT_CREATE_STRING). Created here because
        // camel-sql 4.14 checks for the table and creates it in one transaction, which
        // PostgreSQL aborts at the failed check.
        s.execute("CREATE TABLE IF NOT EXISTS CAMEL_MESSAGEPROCESSED (processorName VARCHAR(255),"
            + " messageId VARCHAR(100), createdAt TIMESTAMP, PRIMARY KEY (processorName, messageId))");
      }
      // Camel: the documented constructor; start() finds CAMEL_MESSAGEPROCESSED.
      camel = new JdbcMessageIdRepository(pool, "peers-" + run);
      camel.start();
      // Spring Integration: as a bean would be set up, without a context.
      spring = new JdbcMetadataStore(pool);
      spring.afterPropertiesSet();
      spring.start();
      System.out.printf(Locale.ROOT, "%nPostgreSQL: %s, HikariCP pool of %d, %s%n",
          embedded != null ? "embedded (zonky) " + version() : url + " " + version(), poolSize,
          durability());
    }

    /** The settings that decide what a commit costs: printed with every run. */
    private String durability() throws SQLException {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT current_setting('fsync'),"
              + " current_setting('synchronous_commit'), current_setting('full_page_writes')")) {
        rs.next();
        return "fsync=" + rs.getString(1) + ", synchronous_commit=" + rs.getString(2)
            + ", full_page_writes=" + rs.getString(3);
      }
    }

    /**
     * {@code pg_current_wal_insert_lsn()} in bytes (not the position written out, which lags
     * where commits are asynchronous): every session's WAL counts, so run it alone.
     */
    @Override
    public long walPosition() throws SQLException {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(
              "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8")) {
        rs.next();
        return rs.getLong(1);
      }
    }

    private String version() throws SQLException {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SHOW server_version")) {
        rs.next();
        return rs.getString(1);
      }
    }

    @Override
    public String name() {
      return "PostgreSQL";
    }

    /**
     * The postmaster and every process it started (backends, WAL writer, checkpointer...), when
     * the server runs on this host (embedded, or a local service this user may inspect); none for
     * a server elsewhere, whose CPU is then not counted.
     */
    @Override
    public List<ProcessHandle> server() throws SQLException {
      long backend;
      try (Connection c = pool.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        backend = rs.getLong(1);
      }
      // A pid of another host's server may name some process of this one: only a postgres
      // process whose CPU time this user can read counts.
      ProcessHandle postmaster = ProcessHandle.of(backend)
          .filter(p -> p.info().command().orElse("").contains("postgres"))
          .filter(p -> p.info().totalCpuDuration().isPresent())
          .flatMap(ProcessHandle::parent).orElse(null);
      if (postmaster == null) {
        return List.of();
      }
      List<ProcessHandle> all = new ArrayList<>();
      all.add(postmaster);
      postmaster.children().forEach(all::add);
      return all;
    }

    /** A key prefix no earlier workload used. */
    private String prefix(String side) {
      return run + "-" + (generation++) + "-" + side.replace(' ', '_') + "-";
    }

    @Override
    public List<Side> newKeys(int threads, List<Integer> coalesce) {
      List<Side> sides = new ArrayList<>();
      onceSides(store, coalesce).forEach((name, once) -> {
        String p = prefix(name);
        sides.add(new Side(name, true, (t, n) -> newKey(once, IdempotencyKey.of(SCOPE,
            p + t + "-" + n))));
      });
      String hand = prefix("hand"); // as long as the Once side's "once": keys of the same size
      sides.add(new Side(BY_HAND, true, (t, n) -> onceByHand(hand + t + "-" + n)));
      String single = prefix("raw");
      sides.add(new Side("raw insert", false, (t, n) -> {
        if (rawInsert(single + t + "-" + n) != 1) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }));
      String pair = prefix("rawpair");
      sides.add(new Side("raw insert+update", false, (t, n) -> rawPair(pair + t + "-" + n)));
      String c = prefix("camel");
      sides.add(new Side("camel", false, (t, n) -> {
        if (!camel.add(c + t + "-" + n)) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }));
      String s = prefix("spring");
      sides.add(new Side("spring-int", false, (t, n) -> {
        if (spring.putIfAbsent(s + t + "-" + n, Long.toString(System.currentTimeMillis())) != null) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }));
      return sides;
    }

    @Override
    public List<Side> duplicates(int threads, List<Integer> coalesce, int keys) throws Exception {
      List<Side> sides = new ArrayList<>();
      Map<String, Once> onces = onceSides(store, coalesce);
      Once plain = onces.get("once");
      String o = prefix("once");
      parallel(8, keys, (t, i) -> newKey(plain, IdempotencyKey.of(SCOPE, o + i)));
      onces.forEach((name, once) -> sides.add(new Side(name, true,
          (t, n) -> replay(once, IdempotencyKey.of(SCOPE, o + pick(t, n, keys))))));
      String raw = prefix("raw");
      parallel(8, keys, (t, i) -> rawPair(raw + i));
      sides.add(new Side("raw insert", false, (t, n) -> {
        if (rawInsert(raw + pick(t, n, keys)) != 0) {
          throw new IllegalStateException("duplicate keys must exist");
        }
      }));
      sides.add(new Side("raw insert+update", false, (t, n) -> rawPairDuplicate(raw + pick(t, n, keys))));
      String c = prefix("camel");
      parallel(8, keys, (t, i) -> camel.add(c + i));
      sides.add(new Side("camel", false, (t, n) -> {
        if (camel.add(c + pick(t, n, keys))) {
          throw new IllegalStateException("duplicate keys must exist");
        }
      }));
      String s = prefix("spring");
      parallel(8, keys, (t, i) -> spring.putIfAbsent(s + i, Long.toString(System.currentTimeMillis())));
      sides.add(new Side("spring-int", false, (t, n) -> {
        if (spring.putIfAbsent(s + pick(t, n, keys), Long.toString(System.currentTimeMillis())) == null) {
          throw new IllegalStateException("duplicate keys must exist");
        }
      }));
      return sides;
    }

    private int rawInsert(String key) throws SQLException {
      try (Connection c = pool.getConnection(); PreparedStatement insert = c.prepareStatement(INSERT_RAW)) {
        insert.setString(1, key);
        insert.setBytes(2, HASH);
        return insert.executeUpdate();
      }
    }

    private void rawPair(String key) throws SQLException {
      try (Connection c = pool.getConnection()) {
        try (PreparedStatement insert = c.prepareStatement(INSERT_RAW)) {
          insert.setString(1, key);
          insert.setBytes(2, HASH);
          if (insert.executeUpdate() == 0) {
            throw new IllegalStateException("benchmark keys must be new");
          }
        }
        try (PreparedStatement update = c.prepareStatement(UPDATE_RAW)) {
          update.setBytes(1, RESPONSE_BYTES);
          update.setString(2, key);
          update.executeUpdate();
        }
      }
    }

    /**
     * What {@code once} sends for a new key, by hand: {@code JdbcStore}'s claim (its insert of a
     * record with no checkpoint, outcome or error) and its completion under the token, as its
     * {@code Dialect} writes them for PostgreSQL (copied here: the benchmark sees no internals),
     * each in autocommit on a connection of its own from the pool, as {@code JdbcStore} borrows
     * one per store call, with values of the sizes a call writes (a claim's expiry is its
     * retention, as {@code ClaimRequest.expiresAt()} gives it).
     */
    private void onceByHand(String key) throws SQLException {
      long now = System.currentTimeMillis() * 1000;
      long leaseUntil = now + 30_000_000L;
      long expires = now + 86_400_000_000L;
      long token = now;
      try (Connection c = pool.getConnection();
          PreparedStatement insert = c.prepareStatement(onceInsert)) {
        int i = 1;
        insert.setString(i++, SCOPE);
        insert.setString(i++, "");
        insert.setString(i++, key);
        insert.setString(i++, "IN_PROGRESS");
        insert.setBytes(i++, HASH);
        insert.setLong(i++, token);
        insert.setLong(i++, leaseUntil);
        insert.setInt(i++, 1);
        insert.setLong(i++, now);
        insert.setLong(i++, now);
        insert.setLong(i++, expires);
        insert.setLong(i++, token);
        insert.setLong(i++, expires);
        if (insert.executeUpdate() != 1) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }
      try (Connection c = pool.getConnection();
          PreparedStatement complete = c.prepareStatement(onceComplete)) {
        int i = 1;
        complete.setString(i++, "SUCCESS");
        complete.setString(i++, Codecs.utf8().mediaType());
        complete.setBytes(i++, RESPONSE_BYTES);
        complete.setLong(i++, now);
        complete.setLong(i++, expires);
        complete.setLong(i++, expires);
        complete.setString(i++, SCOPE);
        complete.setString(i++, "");
        complete.setString(i++, key);
        complete.setLong(i++, token);
        if (complete.executeUpdate() != 1) {
          throw new IllegalStateException("the completion must find its claim");
        }
      }
    }

    /** A duplicate the hand-written way: the insert finds the key, then the stored response is read. */
    private void rawPairDuplicate(String key) throws SQLException {
      try (Connection c = pool.getConnection()) {
        try (PreparedStatement insert = c.prepareStatement(INSERT_RAW)) {
          insert.setString(1, key);
          insert.setBytes(2, HASH);
          if (insert.executeUpdate() != 0) {
            throw new IllegalStateException("duplicate keys must exist");
          }
        }
        try (PreparedStatement select = c.prepareStatement(SELECT_RAW)) {
          select.setString(1, key);
          try (ResultSet rs = select.executeQuery()) {
            if (!rs.next() || rs.getBytes(2) == null) {
              throw new IllegalStateException("no stored response for " + key);
            }
          }
        }
      }
    }

    @Override
    public void close() throws Exception {
      camel.stop();
      spring.stop();
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      } catch (SQLException e) {
        // best effort
      }
      pool.close();
      if (embedded != null) {
        embedded.close();
      }
    }
  }

  // --- Redis ---------------------------------------------------------------------------------------

  private static final class Redis implements Target {
    private final PrivateRedisServer server;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> raw;
    private final RedisStore store;
    private final LettuceConnectionFactory factory;
    private final RedisMetadataStore spring;
    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private int generation;

    Redis() throws Exception {
      server = PrivateRedisServer.start();
      RedisURI uri = RedisURI.create(server.uri());
      client = RedisClient.create(uri);
      raw = client.connect();
      store = RedisStore.builder(client).commandTimeout(Duration.ofSeconds(10)).build();
      // Spring Integration: spring-data-redis' Lettuce factory with its defaults.
      factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(uri.getHost(),
          uri.getPort()));
      factory.afterPropertiesSet();
      factory.start();
      spring = new RedisMetadataStore(factory);
      System.out.printf(Locale.ROOT, "%nRedis: private redis-server %s on %s%n",
          raw.sync().info("server").lines().filter(l -> l.startsWith("redis_version:"))
              .findFirst().orElse("?"), server.uri());
    }

    @Override
    public String name() {
      return "Redis";
    }

    @Override
    public List<ProcessHandle> server() {
      long pid = Long.parseLong(raw.sync().info("server").lines()
          .filter(l -> l.startsWith("process_id:")).findFirst().orElseThrow()
          .substring("process_id:".length()).trim());
      return List.of(ProcessHandle.of(pid).orElseThrow());
    }

    private String prefix(String side) {
      return run + "-" + (generation++) + "-" + side.replace(' ', '_') + "-";
    }

    @Override
    public List<Side> newKeys(int threads, List<Integer> coalesce) {
      List<Side> sides = new ArrayList<>();
      onceSides(store, coalesce).forEach((name, once) -> {
        String p = prefix(name);
        sides.add(new Side(name, true, (t, n) -> newKey(once, IdempotencyKey.of(SCOPE,
            p + t + "-" + n))));
      });
      RedisCommands<String, String> sync = raw.sync();
      String r = "raw:" + prefix("raw");
      SetArgs nxPx = SetArgs.Builder.nx().px(LEASE.toMillis());
      sides.add(new Side("raw SET NX PX", false, (t, n) -> {
        if (sync.set(r + t + "-" + n, "started", nxPx) == null) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }));
      String s = prefix("spring");
      sides.add(new Side("spring-int", false, (t, n) -> {
        if (spring.putIfAbsent(s + t + "-" + n, Long.toString(System.currentTimeMillis())) != null) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }));
      return sides;
    }

    @Override
    public List<Side> duplicates(int threads, List<Integer> coalesce, int keys) throws Exception {
      List<Side> sides = new ArrayList<>();
      Map<String, Once> onces = onceSides(store, coalesce);
      Once plain = onces.get("once");
      String o = prefix("once");
      parallel(8, keys, (t, i) -> newKey(plain, IdempotencyKey.of(SCOPE, o + i)));
      onces.forEach((name, once) -> sides.add(new Side(name, true,
          (t, n) -> replay(once, IdempotencyKey.of(SCOPE, o + pick(t, n, keys))))));
      RedisCommands<String, String> sync = raw.sync();
      String r = "raw:" + prefix("raw");
      SetArgs px = SetArgs.Builder.px(RETENTION.toMillis());
      parallel(8, keys, (t, i) -> sync.set(r + i, RESPONSE, px));
      sides.add(new Side("raw GET", false, (t, n) -> {
        if (sync.get(r + pick(t, n, keys)) == null) {
          throw new IllegalStateException("duplicate keys must exist");
        }
      }));
      String s = prefix("spring");
      parallel(8, keys, (t, i) -> spring.putIfAbsent(s + i, Long.toString(System.currentTimeMillis())));
      sides.add(new Side("spring-int", false, (t, n) -> {
        if (spring.putIfAbsent(s + pick(t, n, keys), Long.toString(System.currentTimeMillis())) == null) {
          throw new IllegalStateException("duplicate keys must exist");
        }
      }));
      return sides;
    }

    @Override
    public void close() throws Exception {
      store.close();
      factory.destroy();
      raw.close();
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      server.close();
    }
  }
}
