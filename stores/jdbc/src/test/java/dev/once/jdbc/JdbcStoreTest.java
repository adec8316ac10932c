package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.Racers;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.ds.PGSimpleDataSource;

/** What the conformance suite does not cover: schema, configuration, errors, time, batches. */
class JdbcStoreTest {

  /** The columns of every schema version but PostgreSQL's purge_after, named: order varies. */
  private static final String COLUMNS = "scope, tenant, idem_key, status, fingerprint, token,"
      + " lease_until, attempts, checkpoint_name, checkpoint_data, outcome_kind,"
      + " outcome_media_type, outcome_body, last_error, created_at, updated_at, expires_at,"
      + " claim_id";

  private static final Fingerprint FP = Fingerprint.of("jdbc");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final Instant T0 = Instant.parse("2031-03-04T05:06:07Z");

  private static IdempotencyKey key(String k) {
    return IdempotencyKey.of("jdbc-test." + UUID.randomUUID().toString().substring(0, 8), k);
  }

  private static ClaimRequest request(IdempotencyKey key, Instant now) {
    return new ClaimRequest(key, FP, now, LEASE, RETENTION);
  }

  private static void drop(DataSource dataSource, String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    }
  }

  // --------------------------------------------------------------------------------------------
  // schema

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void schemaTextNamesTheTableItsIndexesAndTheTimeUnit(JdbcDialect dialect) {
    String ddl = dialect.schema("orders_once");

    assertThat(ddl).contains("CREATE TABLE IF NOT EXISTS orders_once (")
        .contains("orders_once_expires_idx").contains("orders_once_reap_idx")
        .contains("PRIMARY KEY (scope, tenant, idem_key)").contains("microseconds")
        .doesNotContain("${");
    for (String column : List.of("scope", "tenant", "idem_key", "status", "fingerprint", "token",
        "lease_until", "attempts", "checkpoint_name", "checkpoint_data", "outcome_kind",
        "outcome_media_type", "outcome_body", "last_error", "created_at", "updated_at",
        "expires_at")) {
      assertThat(ddl).containsPattern("(?m)^\\s+" + column + "\\s");
    }
    assertThat(ddl).containsPattern("(?m)^ALTER TABLE orders_once ADD COLUMN (IF NOT EXISTS )?"
        + "claim_id (bigint|BIGINT|INTEGER) NOT NULL DEFAULT 0;$");
    if (dialect == JdbcDialect.POSTGRESQL) {
      // Version 3: the expiry floor and its index replace the index on expires_at.
      assertThat(ddl).containsPattern("(?m)^ALTER TABLE orders_once ADD COLUMN IF NOT EXISTS"
              + " purge_after bigint NOT NULL DEFAULT 0;$")
          .contains("CREATE INDEX IF NOT EXISTS orders_once_purge_idx ON orders_once"
              + " (purge_after);")
          .contains("DROP INDEX IF EXISTS orders_once_expires_idx;");
    }
    assertThat(dialect.schemaResources())
        .hasSize(dialect == JdbcDialect.POSTGRESQL ? 5 : 2)
        .first().isEqualTo(dialect.schemaResource());
    for (String resource : dialect.schemaResources()) {
      assertThat(JdbcStoreTest.class.getClassLoader().getResource(resource)).isNotNull();
    }
  }

  @Test
  void schemaTextUsesEachDialectsTypes() {
    assertThat(JdbcDialect.POSTGRESQL.schema("t")).contains("COLLATE \"C\"").contains("bytea")
        .contains("expires_at         bigint");
    assertThat(JdbcDialect.MARIADB.schema("t")).contains("VARBINARY(255)").contains("LONGBLOB")
        .contains("ENGINE = InnoDB");
    assertThat(JdbcDialect.SQLITE.schema("t")).contains("BLOB").contains("INTEGER NOT NULL");
    assertThat(JdbcDialect.POSTGRESQL.schema("app.once")).contains("CREATE TABLE IF NOT EXISTS"
        + " app.once (").contains("CREATE INDEX IF NOT EXISTS once_expires_idx ON app.once")
        .contains("CREATE INDEX IF NOT EXISTS once_purge_idx ON app.once (purge_after);")
        .contains("DROP INDEX IF EXISTS app.once_expires_idx;");
    // Versions 4 and 5 are each one DO block: split as one statement, its body whole.
    java.util.List<String> statements = dev.once.jdbc.internal.SchemaScript.statements(
        JdbcDialect.POSTGRESQL.schema("app.once"));
    assertThat(statements).hasSize(9);
    assertThat(statements.get(7)).startsWith("DO $$").endsWith("END $$")
        .contains("DROP TABLE app.once;").contains("CREATE TABLE app.once (")
        .contains("CREATE INDEX once_purge_idx ON app.once (purge_after);");
    assertThat(statements.get(8)).startsWith("DO $$").endsWith("END $$")
        .contains("hashtext('once.createSchema:app.once')").contains("to_regclass('app.once')")
        .contains("EXECUTE format('ALTER TABLE %s %s', t, drops);");
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void createSchemaIsExplicitAndIdempotent(JdbcDialect dialect) throws SQLException {
    DataSource dataSource = Databases.dataSource(dialect);
    String table = Databases.uniqueTable("once_schema");
    try {
      JdbcStore store = JdbcStore.builder(dataSource).dialect(dialect).table(table).build();
      IdempotencyKey key = key("k");

      assertThatThrownBy(() -> store.claim(request(key, T0)))
          .as("no table is created implicitly")
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageStartingWith("claim on " + key + " failed: ")
          .hasCauseInstanceOf(SQLException.class);

      store.createSchema();
      store.createSchema();

      assertThat(store.claim(request(key, T0))).isInstanceOf(Claim.Acquired.class);
      store.createSchema();
      assertThat(store.find(key)).isPresent();
    } finally {
      drop(dataSource, table);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "1abc", "once-records", "once records", "once;drop table x",
      "a.b.c", "\"quoted\"", "once_records ", "schema.", ".table", "tablé",
      "x23456789012345678901234567890123456789012"})
  void invalidTableNamesAreRejected(String table) {
    JdbcStore.Builder builder = JdbcStore.builder(Databases.Sqlite.DATA_SOURCE);

    assertThatThrownBy(() -> builder.table(table)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("invalid table name");
    assertThatThrownBy(() -> JdbcDialect.POSTGRESQL.schema(table))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void sqliteTablesCannotBeSchemaQualified() {
    assertThatThrownBy(() -> JdbcDialect.SQLITE.schema("main.once"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SQLite");
    assertThatThrownBy(() -> JdbcStore.builder(Databases.Sqlite.DATA_SOURCE)
        .dialect(JdbcDialect.SQLITE).table("main.once").build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(JdbcDialect.MARIADB.schema("test.once")).contains("test.once (");
  }

  // --------------------------------------------------------------------------------------------
  // configuration

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void detectsTheDialectFromTheDriver(JdbcDialect dialect) {
    JdbcStore store = JdbcStore.builder(Databases.dataSource(dialect))
        .table(Databases.store(dialect).table()).build();

    assertThat(store.dialect()).isEqualTo(dialect);
    assertThat(JdbcDialect.detect(Databases.dataSource(dialect))).isEqualTo(dialect);
    assertThat(store.claim(request(key("detected"), T0))).isInstanceOf(Claim.Acquired.class);
  }

  /**
   * Coalescing left to the store: on where batches pay and give up on a held row within 50 ms
   * (PostgreSQL), beyond as many callers as the pool has connections (8 where the pool does not
   * say); off where the bound is whole seconds (MariaDB) or there is none (SQLite), given or
   * detected alike.
   */
  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void suggestsCoalescingOnlyWhereABatchGivesUpOnAHeldRowWithinItsLockWait(JdbcDialect dialect) {
    int expected = dialect == JdbcDialect.POSTGRESQL ? Databases.POOL_SIZE : 0;
    assertThat(Databases.store(dialect).defaultCoalescing()).isEqualTo(expected);
    assertThat(JdbcStore.builder(new CountingDataSource(Databases.dataSource(dialect)).dataSource)
        .dialect(dialect).build().defaultCoalescing())
        .as("over a DataSource that does not say its pool's size")
        .isEqualTo(dialect == JdbcDialect.POSTGRESQL ? 8 : 0);
    JdbcStore detecting = JdbcStore.builder(Databases.dataSource(dialect))
        .table(Databases.store(dialect).table()).build();
    assertThat(detecting.defaultCoalescing()).as("not known before it is detected").isEqualTo(-1);
    detecting.dialect();
    assertThat(detecting.defaultCoalescing()).as("detected").isEqualTo(expected);
  }

  @Test
  void mapsProductNames() {
    assertThat(JdbcDialect.fromProductName("PostgreSQL")).contains(JdbcDialect.POSTGRESQL);
    assertThat(JdbcDialect.fromProductName("MariaDB")).contains(JdbcDialect.MARIADB);
    assertThat(JdbcDialect.fromProductName("MySQL")).contains(JdbcDialect.MARIADB);
    assertThat(JdbcDialect.fromProductName("SQLite")).contains(JdbcDialect.SQLITE);
    assertThat(JdbcDialect.fromProductName("Oracle")).isEmpty();
  }

  @Test
  void payloadBoundsHaveDialectDefaultsAndCanBeSet() {
    assertThat(Databases.Postgres.STORE.maxPayloadBytes()).isEqualTo(64 << 20);
    assertThat(Databases.MariaDb.STORE.maxPayloadBytes()).isEqualTo(
        JdbcDialect.MARIADB.defaultMaxPayloadBytes());
    assertThat(Databases.Sqlite.STORE.maxPayloadBytes()).isEqualTo(64 << 20);
    assertThat(JdbcStore.builder(Databases.Sqlite.DATA_SOURCE).dialect(JdbcDialect.SQLITE)
        .maxPayloadBytes(1024).build().maxPayloadBytes()).isEqualTo(1024);
    assertThatThrownBy(() -> JdbcStore.builder(Databases.Sqlite.DATA_SOURCE).maxPayloadBytes(0))
        .isInstanceOf(IllegalArgumentException.class);
  }

  // --------------------------------------------------------------------------------------------
  // errors

  @Test
  void aClosedPoolMakesEveryOperationStoreUnavailable() {
    HikariConfig config = Databases.config("once-closed");
    config.setDataSource(Databases.Postgres.DATA_SOURCE);
    config.setMinimumIdle(0);
    HikariDataSource pool = new HikariDataSource(config);
    JdbcStore store = JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL)
        .table(Databases.Postgres.TABLE).build();
    pool.close();
    IdempotencyKey key = key("closed");

    assertUnavailable(() -> store.claim(request(key, T0)), "claim on " + key + " failed: ");
    assertUnavailable(() -> store.claimAll(List.of(request(key, T0), request(key("b"), T0))),
        "claimAll of 2 keys failed: ");
    assertUnavailable(() -> store.find(key), "find on " + key + " failed: ");
    assertUnavailable(() -> store.complete(key, 1, Outcome.success("t", new byte[0]), T0,
        RETENTION), "complete on " + key + " failed: ");
    assertUnavailable(() -> store.completeAll(List.of(
        new Completion(key, 1, Outcome.success("t", new byte[0])),
        new Completion(key("b"), 1, Outcome.success("t", new byte[0]))), T0, RETENTION),
        "completeAll of 2 keys failed: ");
    assertUnavailable(() -> store.fail(key, 1, "x", T0, RETENTION), "fail on " + key);
    assertUnavailable(() -> store.extend(key, 1, T0, LEASE), "extend on " + key);
    assertUnavailable(() -> store.checkpoint(key, 1, Checkpoint.of("c", new byte[0]), T0),
        "checkpoint on " + key);
    assertUnavailable(() -> store.purgeExpired(T0, 10), "purgeExpired failed: ");
    assertUnavailable(() -> store.reapExpiredLeases(T0, 10), "reapExpiredLeases failed: ");
    assertUnavailable(store::createSchema, "createSchema of ");
    assertThat(store.dialect()).as("given, so never detected").isEqualTo(JdbcDialect.POSTGRESQL);
  }

  @Test
  void anUnreachableServerIsStoreUnavailable() throws IOException {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    PGSimpleDataSource broken = new PGSimpleDataSource();
    broken.setURL("jdbc:postgresql://127.0.0.1:" + port + "/nothing");
    broken.setConnectTimeout(2);

    IdempotencyKey key = key("unreachable");
    // Building never connects; the first call detects the dialect and finds no server.
    JdbcStore detecting = JdbcStore.builder(broken).build();
    assertThat(detecting).hasToString("JdbcStore[dialect detected on first call, once_records]");
    assertUnavailable(() -> detecting.claim(request(key, T0)),
        "detecting the database dialect failed");
    assertUnavailable(detecting::dialect, "detecting the database dialect failed");
    JdbcStore store = JdbcStore.builder(broken).dialect(JdbcDialect.POSTGRESQL).build();
    assertUnavailable(() -> store.claim(request(key, T0)), "claim on " + key + " failed: ");
    assertThatThrownBy(() -> store.claim(request(key, T0)))
        .hasMessageContaining("no connection could be made, nothing was sent");
  }

  /** Unavailable, and known to have changed nothing: no connection could be made. */
  private static void assertUnavailable(org.assertj.core.api.ThrowableAssert.ThrowingCallable call,
      String messageStart) {
    assertThatThrownBy(call).isInstanceOfSatisfying(StoreUnavailableException.class,
            e -> assertThat(e.mayHaveBeenApplied()).as("may have been applied").isFalse())
        .hasMessageStartingWith(messageStart).hasCauseInstanceOf(SQLException.class);
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void aClaimOrBatchMeetingAnErrorInTheDatabaseWritesNothingAndSaysSo(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    String scope = key("x").scope();
    List<IdempotencyKey> keys = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      keys.add(IdempotencyKey.of(scope, "k" + i));
    }
    // One key exists already (FAILED): the batch both inserts and updates.
    long token = ((Claim.Acquired) store.claim(request(keys.get(0), T0))).token();
    store.fail(keys.get(0), token, "retry me", T0, RETENTION);
    IdempotencyRecord failed = store.find(keys.get(0)).orElseThrow();
    List<ClaimRequest> batch = new ArrayList<>();
    keys.forEach(k -> batch.add(request(k, T0.plusSeconds(1))));
    IdempotencyKey bad = keys.get(3);
    Poison.inject(store, bad);
    try {
      assertThatThrownBy(() -> store.claimAll(batch))
          .isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).as("rolled back").isFalse())
          .hasMessageStartingWith("claimAll of 5 keys failed: ")
          .hasMessageContaining("poisoned key");
      assertThatThrownBy(() -> store.claim(request(bad, T0.plusSeconds(1))))
          .isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).as("refused").isFalse());
      // The transaction was rolled back: not one row of the batch was written.
      assertThat(store.find(keys.get(0))).contains(failed);
      for (IdempotencyKey k : keys.subList(1, keys.size())) {
        assertThat(store.find(k)).as("record of %s", k).isEmpty();
      }
    } finally {
      Poison.heal(store, bad);
    }
    assertThat(store.claimAll(batch)).allSatisfy(c -> assertThat(c)
        .isInstanceOf(Claim.Acquired.class));
  }

  // --------------------------------------------------------------------------------------------
  // time, keys, payloads

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void instantsAreFlooredToTheMicrosecondNeverRoundedUp(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey key = key("nanos");
    Instant now = T0.plusNanos(123_456_999);
    Instant floored = T0.plusNanos(123_456_000);

    Claim.Acquired acquired = (Claim.Acquired) store.claim(request(key, now));

    assertThat(acquired.token()).isEqualTo(ClaimRules.firstToken(now));
    assertThat(acquired.leaseUntil()).isEqualTo(floored.plus(LEASE));
    IdempotencyRecord r = store.find(key).orElseThrow();
    assertThat(r.createdAt()).isEqualTo(floored);
    assertThat(r.leaseUntil()).isEqualTo(acquired.leaseUntil());
    assertThat(r.expiresAt()).isEqualTo(floored.plus(RETENTION));
    // One nanosecond before the lease ends the lease is live; at its end it is over.
    assertThat(store.claim(request(key, r.leaseUntil().minusNanos(1))))
        .isEqualTo(new Claim.InProgress(r.leaseUntil()));
    Claim takeover = store.claim(request(key, r.leaseUntil()));
    assertThat(takeover).isInstanceOf(Claim.Acquired.class);
    long token = ((Claim.Acquired) takeover).token();
    Instant extended = store.extend(key, token, r.leaseUntil().plusNanos(999), LEASE);
    assertThat(extended).isEqualTo(r.leaseUntil().plus(LEASE));
    store.complete(key, token, Outcome.success("t", new byte[] {1}), now.plusSeconds(1),
        RETENTION);
    IdempotencyRecord done = store.find(key).orElseThrow();
    assertThat(done.updatedAt()).isEqualTo(floored.plusSeconds(1));
    assertThat(done.expiresAt()).isEqualTo(floored.plusSeconds(1).plus(RETENTION));
    assertThat(store.claim(request(key, done.expiresAt().minusNanos(1))))
        .isInstanceOf(Claim.Replay.class);
    assertThat(store.claim(request(key, done.expiresAt()))).isInstanceOf(Claim.Acquired.class);
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void instantsBeforeTheEpochRoundTrip(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey key = key("old");
    Instant now = Instant.parse("1969-12-31T23:59:59.999999500Z");

    store.claim(request(key, now));

    assertThat(store.find(key).orElseThrow().createdAt())
        .isEqualTo(Instant.parse("1969-12-31T23:59:59.999999Z"));
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void keysDifferingOnlyInCaseOrTrailingSpacesAreDistinct(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey base = key("order-1");
    List<IdempotencyKey> keys = List.of(base,
        IdempotencyKey.of(base.scope(), "ORDER-1"),
        IdempotencyKey.of(base.scope(), "order-1 "),
        IdempotencyKey.of(base.scope(), "order-1  "),
        IdempotencyKey.of(base.scope(), "T", "order-1"),
        IdempotencyKey.of(base.scope(), "t", "order-1"));

    for (IdempotencyKey k : keys) {
      assertThat(store.claim(request(k, T0))).as("claim of '%s'", k)
          .isInstanceOf(Claim.Acquired.class);
    }
    for (IdempotencyKey k : keys) {
      assertThat(store.find(k).orElseThrow().key()).isEqualTo(k);
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void theLargestAllowedPayloadRoundTrips(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey key = key("big");
    // All zero bytes: the worst case for drivers that escape bytes into the statement text.
    byte[] body = new byte[store.maxPayloadBytes()];
    Outcome outcome = Outcome.success("application/octet-stream", body);
    long token = ((Claim.Acquired) store.claim(request(key, T0))).token();

    store.checkpoint(key, token, Checkpoint.of("big", body), T0);
    store.complete(key, token, outcome, T0, RETENTION);

    IdempotencyRecord r = store.find(key).orElseThrow();
    assertThat(r.outcome().size()).isEqualTo(body.length);
    assertThat(r.outcome()).isEqualTo(outcome);
    assertThat(r.checkpoint().size()).isEqualTo(body.length);
  }

  // --------------------------------------------------------------------------------------------
  // batches

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void batchesKeepAwkwardKeysExact(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    String scope = key("x").scope();
    List<IdempotencyKey> keys = List.of(IdempotencyKey.of(scope, "NULL"),
        IdempotencyKey.of(scope, "{a,b}"), IdempotencyKey.of(scope, "\"quoted\" \\ 'single'"),
        IdempotencyKey.of(scope, " lead and trail "), IdempotencyKey.of(scope, "t,{\"}", "k"));
    List<ClaimRequest> requests = new ArrayList<>();
    keys.forEach(k -> requests.add(request(k, T0)));

    List<Claim> claims = store.claimAll(requests);

    assertThat(claims).allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
    for (IdempotencyKey k : keys) {
      assertThat(store.find(k).orElseThrow().key()).isEqualTo(k);
    }
    // The same requests re-sent are their claimants' own; anyone else's are in progress.
    assertThat(store.claimAll(requests)).isEqualTo(claims);
    List<ClaimRequest> others = new ArrayList<>();
    keys.forEach(k -> others.add(request(k, T0)));
    assertThat(store.claimAll(others)).allSatisfy(c -> assertThat(c)
        .isEqualTo(new Claim.InProgress(T0.plus(LEASE))));
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void batchCompletionsKeepAwkwardKeysExactAndReportOnlyTheLostOnes(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    String scope = key("x").scope();
    List<IdempotencyKey> keys = List.of(IdempotencyKey.of(scope, "NULL"),
        IdempotencyKey.of(scope, "{a,b}"), IdempotencyKey.of(scope, "\"quoted\" \\ 'single'"),
        IdempotencyKey.of(scope, " lead and trail "), IdempotencyKey.of(scope, "t,{\"}", "k"));
    List<Completion> completions = new ArrayList<>();
    for (IdempotencyKey k : keys) {
      long token = ((Claim.Acquired) store.claim(request(k, T0))).token();
      // The third one completes with a stale token.
      long written = k == keys.get(2) ? token - 1 : token;
      completions.add(new Completion(k, written,
          Outcome.success("text/plain", k.key().getBytes(StandardCharsets.UTF_8))));
    }

    assertThat(store.completeAll(completions, T0.plusSeconds(1), RETENTION))
        .containsExactly(keys.get(2));

    for (IdempotencyKey k : keys) {
      IdempotencyRecord r = store.find(k).orElseThrow();
      assertThat(r.key()).isEqualTo(k);
      assertThat(r.status()).isEqualTo(k == keys.get(2) ? Status.IN_PROGRESS : Status.COMPLETED);
      if (k != keys.get(2)) {
        assertThat(r.outcome().body()).isEqualTo(k.key().getBytes(StandardCharsets.UTF_8));
        assertThat(r.updatedAt()).isEqualTo(T0.plusSeconds(1));
      }
    }
  }

  @Test
  void aPostgresBatchCompletionIsOneStatement() {
    CountingDataSource counting = new CountingDataSource(Databases.Postgres.DATA_SOURCE);
    JdbcStore store = JdbcStore.builder(counting.dataSource).dialect(JdbcDialect.POSTGRESQL)
        .table(Databases.Postgres.TABLE).build();
    String scope = key("x").scope();
    List<ClaimRequest> requests = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      requests.add(request(IdempotencyKey.of(scope, "k" + i), T0));
    }
    List<Claim> claims = store.claimAll(requests);
    List<Completion> completions = new ArrayList<>();
    for (int i = 0; i < requests.size(); i++) {
      completions.add(new Completion(requests.get(i).key(),
          ((Claim.Acquired) claims.get(i)).token(), Outcome.success("t", new byte[] {(byte) i})));
    }
    counting.calls.clear();

    assertThat(store.completeAll(completions, T0, RETENTION)).isEmpty();

    assertThat(counting.calls).containsExactly("executeQuery");
  }

  @Test
  void mariaDbBulkBatchesThatAnswerNoCountsStillReportLostLeases() {
    HikariConfig config = Databases.config("once-bulk");
    config.setJdbcUrl(Databases.MariaDb.URL + "?useBulkStmts=true&useAffectedRows=true");
    config.setUsername(Databases.MariaDb.USER);
    config.setPassword(Databases.MariaDb.PASSWORD);
    config.setMaximumPoolSize(2);
    try (HikariDataSource bulk = new HikariDataSource(config)) {
      JdbcStore store = JdbcStore.builder(bulk).dialect(JdbcDialect.MARIADB)
          .table(Databases.MariaDb.TABLE).build();
      IdempotencyKey kept = key("kept");
      IdempotencyKey stale = key("stale");
      long keptToken = ((Claim.Acquired) store.claim(request(kept, T0))).token();
      long staleToken = ((Claim.Acquired) store.claim(request(stale, T0))).token();

      assertThat(store.completeAll(List.of(
          new Completion(kept, keptToken, Outcome.success("t", new byte[] {1})),
          new Completion(stale, staleToken + 1, Outcome.success("t", new byte[] {2}))),
          T0, RETENTION)).containsExactly(stale);

      assertThat(store.find(kept).orElseThrow().status()).isEqualTo(Status.COMPLETED);
      assertThat(store.find(stale).orElseThrow().status()).isEqualTo(Status.IN_PROGRESS);
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void aBatchDecidesEachRequestAfterThePreviousOnes(JdbcDialect dialect) {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey key = key("twice");
    Instant later = T0.plus(LEASE);

    // Second request at the lease end of the first: it takes over the claim the batch just made.
    List<Claim> claims = store.claimAll(List.of(request(key, T0), request(key, later),
        request(key, later)));

    assertThat(claims.get(0)).isInstanceOf(Claim.Acquired.class);
    long first = ((Claim.Acquired) claims.get(0)).token();
    assertThat(claims.get(1)).isEqualTo(new Claim.Acquired(first + 1, true, 2, null,
        later.plus(LEASE)));
    assertThat(claims.get(2)).isEqualTo(new Claim.InProgress(later.plus(LEASE)));
    IdempotencyRecord r = store.find(key).orElseThrow();
    assertThat(r.token()).isEqualTo(first + 1);
    assertThat(r.attempts()).isEqualTo(2);
  }

  /** Every dialect, racing on platform and on virtual threads. */
  static Stream<Arguments> dialectsAndRacers() {
    return Stream.of(JdbcDialect.values()).flatMap(dialect -> Stream.of(Racers.values())
        .map(racers -> Arguments.of(dialect, racers)));
  }

  @ParameterizedTest(name = "{0} on {1} threads")
  @MethodSource("dialectsAndRacers")
  @Tag("races")
  void racingOverlappingBatchesNeitherDeadlockNorAcquireAKeyTwice(JdbcDialect dialect,
      Racers racers) throws Exception {
    JdbcStore store = Databases.store(dialect);
    String scope = key("x").scope();
    List<IdempotencyKey> keys = new ArrayList<>();
    for (int i = 0; i < 24; i++) {
      keys.add(IdempotencyKey.of(scope, "k" + i));
    }
    // Half the keys exist already, so batches both insert and lock.
    for (int i = 0; i < keys.size(); i += 2) {
      long token = ((Claim.Acquired) store.claim(request(keys.get(i), T0))).token();
      store.fail(keys.get(i), token, "retry me", T0, RETENTION);
    }
    int threads = 8;
    ExecutorService pool = racers.pool(threads);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<List<Claim>>> futures = new ArrayList<>();
      List<List<ClaimRequest>> batches = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        List<IdempotencyKey> order = new ArrayList<>(keys);
        Collections.shuffle(order, new Random(t));
        List<ClaimRequest> batch = new ArrayList<>();
        order.subList(0, 16).forEach(k -> batch.add(request(k, T0)));
        batch.add(request(order.get(0), T0));
        batches.add(batch);
        futures.add(pool.submit(() -> {
          go.await();
          return store.claimAll(batch);
        }));
      }
      go.countDown();
      Map<IdempotencyKey, Integer> acquired = new HashMap<>();
      for (int t = 0; t < threads; t++) {
        List<Claim> claims = futures.get(t).get(60, TimeUnit.SECONDS);
        assertThat(claims).hasSize(batches.get(t).size());
        assertThat(claims.get(claims.size() - 1)).isInstanceOf(Claim.InProgress.class);
        for (int i = 0; i < claims.size(); i++) {
          if (claims.get(i) instanceof Claim.Acquired) {
            acquired.merge(batches.get(t).get(i).key(), 1, Integer::sum);
          } else {
            assertThat(claims.get(i)).isInstanceOf(Claim.InProgress.class);
          }
        }
      }
      assertThat(acquired.values()).allSatisfy(n -> assertThat(n).isEqualTo(1));
      for (IdempotencyKey k : acquired.keySet()) {
        assertThat(store.find(k).orElseThrow().status()).isEqualTo(Status.IN_PROGRESS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  // --------------------------------------------------------------------------------------------
  // interleavings with another transaction, forced with a second connection

  @ParameterizedTest
  @EnumSource(value = JdbcDialect.class, names = {"POSTGRESQL", "MARIADB"})
  void aRecordPurgedWhileAClaimWaitsForItIsClaimedAnew(JdbcDialect dialect) throws Exception {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey key = key("purged-meanwhile");
    Claim.Acquired first = (Claim.Acquired) store.claim(request(key, T0));
    Instant later = first.leaseUntil();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (Connection other = Databases.dataSource(dialect).getConnection()) {
      other.setAutoCommit(false);
      lockRow(other, store.table(), key);

      // Wants to take the expired lease over: waits for the row lock.
      Future<Claim> claim = pool.submit(() -> store.claim(request(key, later)));
      awaitBlocked(dialect, claim, key.scope());
      try (Statement s = other.createStatement()) {
        s.executeUpdate("DELETE FROM " + store.table() + " WHERE idem_key = 'purged-meanwhile'"
            + " AND scope = '" + key.scope() + "'");
      }
      other.commit();

      Claim answer = claim.get(30, TimeUnit.SECONDS);
      assertThat(answer).isEqualTo(new Claim.Acquired(ClaimRules.firstToken(later), false, 1,
          null, later.plus(LEASE)));
      assertThat(store.find(key).orElseThrow().token()).isEqualTo(ClaimRules.firstToken(later));
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest
  @EnumSource(value = JdbcDialect.class, names = {"POSTGRESQL", "MARIADB"})
  void aClaimThatWaitedForAConcurrentInsertAnswersFromTheCommittedRow(JdbcDialect dialect)
      throws Exception {
    JdbcStore store = Databases.store(dialect);
    IdempotencyKey done = key("done");
    long token = ((Claim.Acquired) store.claim(request(done, T0))).token();
    Outcome outcome = Outcome.success("text/plain", new byte[] {'o', 'k'});
    store.complete(done, token, outcome, T0, RETENTION);
    IdempotencyKey copy = IdempotencyKey.of(done.scope(), "copy");
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (Connection other = Databases.dataSource(dialect).getConnection()) {
      other.setAutoCommit(false);
      try (Statement s = other.createStatement()) {
        s.executeUpdate("INSERT INTO " + store.table() + " (" + COLUMNS + ")"
            + " SELECT scope, tenant, 'copy', status,"
            + " fingerprint, token, lease_until, attempts, checkpoint_name, checkpoint_data,"
            + " outcome_kind, outcome_media_type, outcome_body, last_error, created_at,"
            + " updated_at, expires_at, claim_id FROM " + store.table() + " WHERE scope = '"
            + done.scope()
            + "' AND idem_key = 'done'");
      }

      // Its insert waits for the uncommitted one, then finds a row its snapshot may not show.
      Future<Claim> claim = pool.submit(() -> store.claim(request(copy, T0.plusSeconds(1))));
      awaitBlocked(dialect, claim, done.scope());
      other.commit();

      assertThat(claim.get(30, TimeUnit.SECONDS)).isEqualTo(new Claim.Replay(outcome, token));
    } finally {
      pool.shutdownNow();
    }
  }

  private static void lockRow(Connection c, String table, IdempotencyKey key) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.executeQuery("SELECT token FROM " + table + " WHERE scope = '" + key.scope()
          + "' AND tenant = '' AND idem_key = '" + key.key() + "' FOR UPDATE").close();
    }
  }

  /**
   * Waits until the claim under test waits for the other transaction: PostgreSQL reports the lock
   * wait; MariaDB shows the statement (with its literal scope) still running.
   */
  private static void awaitBlocked(JdbcDialect dialect, Future<?> claim, String scope)
      throws Exception {
    String sql = dialect == JdbcDialect.POSTGRESQL
        ? "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        : "SELECT count(*) FROM information_schema.processlist WHERE id <> CONNECTION_ID()"
            + " AND command = 'Query' AND info LIKE '%" + scope + "%'";
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    try (Connection c = Databases.dataSource(dialect).getConnection();
        Statement s = c.createStatement()) {
      while (System.nanoTime() < deadline) {
        if (claim.isDone()) {
          throw new AssertionError("the claim did not wait for the other transaction: "
              + claim.get());
        }
        try (java.sql.ResultSet rs = s.executeQuery(sql)) {
          rs.next();
          if (rs.getInt(1) > 0) {
            return;
          }
        }
        Thread.sleep(10);
      }
    }
    throw new AssertionError("the claim never waited for the other transaction's lock");
  }

  // --------------------------------------------------------------------------------------------
  // connections

  @Test
  void poolsWithAutocommitOffStillCommitEveryOperation() {
    HikariConfig config = Databases.config("once-no-autocommit");
    config.setDataSource(Databases.Postgres.DATA_SOURCE);
    config.setAutoCommit(false);
    config.setMaximumPoolSize(2);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      JdbcStore store = JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL)
          .table(Databases.Postgres.TABLE).build();
      IdempotencyKey key = key("manual-commit");
      long token = ((Claim.Acquired) store.claim(request(key, T0))).token();
      store.complete(key, token, Outcome.success("t", new byte[] {7}), T0, RETENTION);

      // Read through the shared pool: the writes were committed, not left in a transaction.
      IdempotencyRecord r = Databases.Postgres.STORE.find(key).orElseThrow();
      assertThat(r.status()).isEqualTo(Status.COMPLETED);
    }
  }

  @Test
  void mariaDbWritesThatChangeNothingAreNotMistakenForALostLease() {
    HikariConfig config = Databases.config("once-affected-rows");
    config.setJdbcUrl(Databases.MariaDb.URL + "?useAffectedRows=true");
    config.setUsername(Databases.MariaDb.USER);
    config.setPassword(Databases.MariaDb.PASSWORD);
    config.setMaximumPoolSize(2);
    try (HikariDataSource affected = new HikariDataSource(config)) {
      JdbcStore store = JdbcStore.builder(affected).dialect(JdbcDialect.MARIADB)
          .table(Databases.MariaDb.TABLE).build();
      IdempotencyKey key = key("same-again");
      long token = ((Claim.Acquired) store.claim(request(key, T0))).token();

      store.checkpoint(key, token, Checkpoint.of("c", new byte[] {1}), T0);
      store.checkpoint(key, token, Checkpoint.of("c", new byte[] {1}), T0);
      assertThat(store.extend(key, token, T0, LEASE)).isEqualTo(T0.plus(LEASE));
      assertThatThrownBy(() -> store.checkpoint(key, token + 1,
          Checkpoint.of("c", new byte[] {1}), T0))
          .isInstanceOf(dev.once.LeaseLostException.class);
    }
  }
}
