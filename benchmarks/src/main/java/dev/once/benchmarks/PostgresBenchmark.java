package dev.once.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.jdbc.TransactionalOnce;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Once on PostgreSQL against the raw statements a hand-written idempotency check uses, through the same
 * driver (pgjdbc) and the same HikariCP pool, in one JMH run. Every operation handles a key never
 * seen before, and the business logic itself does nothing, so only the idempotency machinery is
 * measured:
 *
 * <ul>
 *   <li>{@code raw}: {@code INSERT … ON CONFLICT DO NOTHING} then {@code UPDATE … SET
 *       status='completed'}, each in autocommit: two statements, two commits, no fencing.
 *   <li>{@code onceLease}: {@link Once} over {@link JdbcStore} (lease mode): claim, then complete
 *       under the fencing token; two statements, two commits.
 *   <li>{@code onceTransactional}: {@link TransactionalOnce} on the same store: claim and completion
 *       in one transaction; two statements, one commit.
 * </ul>
 *
 * <p>PostgreSQL runs embedded (zonky binaries) with zonky's defaults: {@code fsync} on,
 * {@code synchronous_commit} off (a commit does not wait for its WAL flush, so commits cost CPU
 * only; the modes differ in commits, so take figures with durable commits from a server with
 * {@code synchronous_commit} on); {@code -Donce.bench.postgres=jdbc:…}
 * points it at another server instead. Run with {@code -t 1} and {@code -t 8}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
@State(Scope.Benchmark)
public class PostgresBenchmark {

  private static final String RAW_TABLE = "raw_idempotency_keys";
  private static final String INSERT_RAW = "INSERT INTO " + RAW_TABLE
      + " (idempotency_key, status, request_hash, created_at, updated_at)"
      + " VALUES (?, 'started', ?, now(), now()) ON CONFLICT DO NOTHING";
  private static final String UPDATE_RAW = "UPDATE " + RAW_TABLE
      + " SET status = 'completed', response_body = ?, updated_at = now()"
      + " WHERE idempotency_key = ?";
  private static final byte[] PAYLOAD =
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}".getBytes(StandardCharsets.UTF_8);
  private static final byte[] RESPONSE = "{\"id\":\"ch_1\"}".getBytes(StandardCharsets.UTF_8);

  private EmbeddedPostgres embedded;
  private HikariDataSource pool;
  private Once once;
  private TransactionalOnce transactional;
  private final String run = UUID.randomUUID().toString().substring(0, 8);
  private final AtomicInteger threads = new AtomicInteger();

  @Setup(Level.Trial)
  public void start() throws IOException, SQLException {
    String url = System.getProperty("once.bench.postgres");
    HikariConfig config = new HikariConfig();
    if (url == null || url.isBlank()) {
      embedded = EmbeddedPostgres.builder().start();
      url = embedded.getJdbcUrl("postgres", "postgres");
    }
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(16);
    pool = new HikariDataSource(config);
    JdbcStore store = JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL).build();
    String variant = System.getProperty("once.bench.schema");
    if (variant != null) {
      // A schema variant to compare (createSchema below then finds the table and does nothing).
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute(java.nio.file.Files.readString(java.nio.file.Path.of(variant)));
      }
    }
    store.createSchema();
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      // The articles' table: key as primary key, status, response cached as bytes.
      s.execute("CREATE TABLE IF NOT EXISTS " + RAW_TABLE + " (idempotency_key text PRIMARY KEY,"
          + " status text NOT NULL, request_hash bytea, response_body bytea,"
          + " created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)");
    }
    once = Once.builder(store).build();
    transactional = TransactionalOnce.builder(store).build();
  }

  @TearDown(Level.Trial)
  public void stop() throws IOException {
    pool.close();
    if (embedded != null) {
      embedded.close();
    }
  }

  /** Per-thread key source: keys never repeat across threads, iterations or runs. */
  @State(Scope.Thread)
  public static class Keys {
    private String prefix;
    private long next;

    @Setup(Level.Trial)
    public void setUp(PostgresBenchmark bench) {
      prefix = "bench-" + bench.run + "-" + bench.threads.incrementAndGet() + "-";
    }

    String next() {
      return prefix + next++;
    }
  }

  @Benchmark
  public void raw(Keys keys) throws SQLException {
    String key = keys.next();
    byte[] hash = Fingerprint.of(PAYLOAD).digest();
    try (Connection c = pool.getConnection()) {
      try (PreparedStatement insert = c.prepareStatement(INSERT_RAW)) {
        insert.setString(1, key);
        insert.setBytes(2, hash);
        if (insert.executeUpdate() == 0) {
          throw new IllegalStateException("benchmark keys must be new");
        }
      }
      try (PreparedStatement update = c.prepareStatement(UPDATE_RAW)) {
        update.setBytes(1, RESPONSE);
        update.setString(2, key);
        update.executeUpdate();
      }
    }
  }

  @Benchmark
  public String onceLease(Keys keys) {
    return once.execute(IdempotencyKey.of("bench.charge", keys.next()), Fingerprint.of(PAYLOAD),
        Codecs.utf8(), attempt -> "{\"id\":\"ch_1\"}");
  }

  @Benchmark
  public String onceTransactional(Keys keys) {
    return transactional.execute(IdempotencyKey.of("bench.charge", keys.next()),
        Fingerprint.of(PAYLOAD), Codecs.utf8(), tx -> "{\"id\":\"ch_1\"}");
  }
}
