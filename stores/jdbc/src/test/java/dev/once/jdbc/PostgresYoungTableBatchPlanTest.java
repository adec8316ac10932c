package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.HeldClaim;
import dev.once.spi.Outcome;
import dev.once.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A batch statement planned while the table was young must not scan the grown table. PostgreSQL
 * caches a prepared statement's generic plan after five executions (pgjdbc prepares it on the
 * server after five); made when the table held a few rows, a batch completion's plan joined the
 * batch to a sequential scan of the whole table, and kept doing so as the table grew, until an
 * autoanalyze (up to a minute later, longer on a busy server) threw the plan away: a fresh table
 * under coalesced calls or a consumer's batches scanned every row for every batch. Batch
 * statements are planned with their values each time instead. Seen through the table's
 * {@code seq_scan} count, on a pool of one connection, so that the connection that cached the
 * plan is the one that runs the batch.
 */
@Tag("postgres")
class PostgresYoungTableBatchPlanTest {

  private static final Fingerprint FP = Fingerprint.of("plan");
  private static final Outcome OUTCOME = Outcome.success("text/plain", new byte[] {1});
  private static final Duration LEASE = Duration.ofMinutes(5);
  private static final Duration RETENTION = Duration.ofHours(1);

  private final String table = Databases.uniqueTable("once_young");
  private final String scope = "young." + UUID.randomUUID().toString().substring(0, 8);
  private HikariDataSource one;
  private JdbcStore store;
  private int keys;

  @BeforeEach
  void start() throws SQLException {
    try (Connection c = Databases.Postgres.DATA_SOURCE.getConnection()) {
      org.junit.jupiter.api.Assumptions.assumeTrue(
          c.getMetaData().getDatabaseMajorVersion() >= 15,
          "pg_stat_force_next_flush() needs PostgreSQL 15");
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    config.setMaximumPoolSize(1);
    config.setPoolName("once-young-table");
    one = new HikariDataSource(config);
    store = JdbcStore.builder(one).dialect(JdbcDialect.POSTGRESQL).table(table).build();
    store.createSchema();
  }

  @AfterEach
  void stop() throws SQLException {
    try (Connection c = Databases.Postgres.DATA_SOURCE.getConnection();
        Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    }
    one.close();
  }

  @Test
  void aBatchCompletionPlannedOnAYoungTableDoesNotScanItOnceItHasGrown() throws Exception {
    assertNoScanOnceGrown(held -> {
      List<Completion> completions = new ArrayList<>();
      for (HeldClaim h : held) {
        completions.add(new Completion(h.key(), h.token(), OUTCOME));
      }
      assertThat(store.completeAll(completions, Instant.now(), RETENTION)).isEmpty();
    });
  }

  @Test
  void aBatchHeartbeatPlannedOnAYoungTableDoesNotScanItOnceItHasGrown() throws Exception {
    assertNoScanOnceGrown(held ->
        assertThat(store.extendAll(held, Instant.now(), LEASE)).isEmpty());
  }

  @Test
  void aBatchReadPlannedOnAYoungTableDoesNotScanItOnceItHasGrown() throws Exception {
    assertNoScanOnceGrown(held -> {
      List<ClaimRequest> duplicates = new ArrayList<>();
      for (HeldClaim h : held) {
        duplicates.add(new ClaimRequest(h.key(), FP, Instant.now(), LEASE, RETENTION));
      }
      assertThat(store.claimAll(duplicates)).allMatch(c -> c instanceof Claim.InProgress);
    });
  }

  /**
   * Runs {@code batch} on two new claims 16 times while the table is young (pgjdbc prepares on the
   * server from the fifth, PostgreSQL plans generically from the named statement's sixth), then
   * once more on the grown table.
   */
  private void assertNoScanOnceGrown(Consumer<List<HeldClaim>> batch) throws Exception {
    for (int i = 0; i < 16; i++) {
      batch.accept(claimTwo());
    }
    List<HeldClaim> last = claimTwo();
    grow(50_000);
    long before = sequentialScans();

    batch.accept(last);

    assertThat(sequentialScans() - before).as("sequential scans of the grown table").isZero();
  }

  private List<HeldClaim> claimTwo() {
    List<HeldClaim> held = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      IdempotencyKey key = IdempotencyKey.of(scope, "k" + keys++);
      Claim claim = store.claim(new ClaimRequest(key, FP, Instant.now(), LEASE, RETENTION));
      held.add(new HeldClaim(key, ((Claim.Acquired) claim).token()));
    }
    return held;
  }

  /** Rows added in one statement by another session: what many claims would leave. */
  private void grow(int rows) throws SQLException {
    try (Connection c = Databases.Postgres.DATA_SOURCE.getConnection();
        Statement s = c.createStatement()) {
      s.execute("INSERT INTO " + table + " (scope, tenant, idem_key, status, fingerprint, token,"
          + " lease_until, attempts, created_at, updated_at, expires_at, claim_id, purge_after)"
          + " SELECT 'filler', '', 'f' || g, 'COMPLETED', sha256(g::text::bytea), 1, 1, 1, 1, 1,"
          + " 1, 1, 1 FROM generate_series(1, " + rows + ") g");
    }
  }

  /**
   * The table's sequential scans, every session's counted: the store's one connection first
   * flushes its statistics (PostgreSQL 15 on; before it they flush when the session idles).
   */
  private long sequentialScans() throws Exception {
    try (Connection c = one.getConnection(); Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_force_next_flush()");
      s.execute("SELECT 1"); // ends a transaction after the request: the flush happens now
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    long last = -1;
    while (true) {
      long now = readSequentialScans();
      if (now == last || System.nanoTime() > deadline) {
        return now; // settled: two reads agree
      }
      last = now;
    }
  }

  private long readSequentialScans() throws SQLException {
    try (Connection c = Databases.Postgres.DATA_SOURCE.getConnection();
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_clear_snapshot()");
      try (ResultSet rs = s.executeQuery(
          "SELECT seq_scan FROM pg_stat_user_tables WHERE relid = '" + table + "'::regclass")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
