package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.SchemaMissingException;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.TestPostgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A table made by the first version of the schema (no {@code claim_id}), as users of the previous
 * release have it: the store refuses it with a message naming the fix, and {@code createSchema()}
 * upgrades it in place, keeping its records. On PostgreSQL also a table of version 2 (no
 * {@code purge_after}), and what version 3 is for: completions and failures are HOT updates; and
 * version 4, which gives a table just made its column order and leaves any other as it is; and
 * version 5, which drops version 1's checks (and the store refuses the rows they refused).
 */
class SchemaUpgradeTest {

  private static final Fingerprint FP = Fingerprint.of("upgrade");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);

  // The DDL of version 1 as it shipped (V1__once_records.sql, comments dropped). A fixture on
  // purpose: the shipped resources may change, the tables users already have do not.

  private static final String POSTGRESQL_V1 = """
      CREATE TABLE IF NOT EXISTS ${table} (
        scope              text COLLATE "C" NOT NULL,
        tenant             text COLLATE "C" NOT NULL,
        idem_key           text COLLATE "C" NOT NULL,
        status             text   NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
        fingerprint        bytea  NOT NULL CHECK (octet_length(fingerprint) = 32),
        token              bigint NOT NULL,
        lease_until        bigint NOT NULL,
        attempts           integer NOT NULL,
        checkpoint_name    text,
        checkpoint_data    bytea,
        outcome_kind       text CHECK (outcome_kind IN ('SUCCESS', 'FAILURE')),
        outcome_media_type text,
        outcome_body       bytea,
        last_error         text,
        created_at         bigint NOT NULL,
        updated_at         bigint NOT NULL,
        expires_at         bigint NOT NULL,
        PRIMARY KEY (scope, tenant, idem_key)
      );
      CREATE INDEX IF NOT EXISTS ${name}_expires_idx ON ${table} USING brin (expires_at);
      CREATE INDEX IF NOT EXISTS ${name}_reap_idx ON ${table} USING brin (lease_until);
      """;

  private static final String MARIADB_V1 = """
      CREATE TABLE IF NOT EXISTS ${table} (
        scope              VARBINARY(128) NOT NULL,
        tenant             VARBINARY(128) NOT NULL,
        idem_key           VARBINARY(255) NOT NULL,
        status             VARCHAR(11) CHARACTER SET ascii NOT NULL,
        fingerprint        BINARY(32) NOT NULL,
        token              BIGINT NOT NULL,
        lease_until        BIGINT NOT NULL,
        attempts           INT NOT NULL,
        checkpoint_name    VARCHAR(128) NULL,
        checkpoint_data    LONGBLOB NULL,
        outcome_kind       VARCHAR(7) CHARACTER SET ascii NULL,
        outcome_media_type TEXT NULL,
        outcome_body       LONGBLOB NULL,
        last_error         MEDIUMTEXT NULL,
        created_at         BIGINT NOT NULL,
        updated_at         BIGINT NOT NULL,
        expires_at         BIGINT NOT NULL,
        PRIMARY KEY (scope, tenant, idem_key),
        INDEX ${name}_expires_idx (expires_at),
        INDEX ${name}_reap_idx (status, lease_until),
        CONSTRAINT ${name}_status_chk CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
        CONSTRAINT ${name}_outcome_chk CHECK (outcome_kind IN ('SUCCESS', 'FAILURE'))
      ) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin;
      """;

  private static final String SQLITE_V1 = """
      CREATE TABLE IF NOT EXISTS ${table} (
        scope              TEXT    NOT NULL,
        tenant             TEXT    NOT NULL,
        idem_key           TEXT    NOT NULL,
        status             TEXT    NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),
        fingerprint        BLOB    NOT NULL CHECK (length(fingerprint) = 32),
        token              INTEGER NOT NULL,
        lease_until        INTEGER NOT NULL,
        attempts           INTEGER NOT NULL,
        checkpoint_name    TEXT,
        checkpoint_data    BLOB,
        outcome_kind       TEXT CHECK (outcome_kind IN ('SUCCESS', 'FAILURE')),
        outcome_media_type TEXT,
        outcome_body       BLOB,
        last_error         TEXT,
        created_at         INTEGER NOT NULL,
        updated_at         INTEGER NOT NULL,
        expires_at         INTEGER NOT NULL,
        PRIMARY KEY (scope, tenant, idem_key)
      );
      CREATE INDEX IF NOT EXISTS ${name}_expires_idx ON ${table} (expires_at);
      CREATE INDEX IF NOT EXISTS ${name}_reap_idx ON ${table} (status, lease_until);
      """;

  /** Version 2 as it shipped for PostgreSQL. */
  private static final String POSTGRESQL_V2 =
      "ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS claim_id bigint NOT NULL DEFAULT 0";

  private static String v1(JdbcDialect dialect) {
    switch (dialect) {
      case POSTGRESQL:
        return POSTGRESQL_V1;
      case MARIADB:
        return MARIADB_V1;
      default:
        return SQLITE_V1;
    }
  }

  /** Creates {@code table} with version 1's DDL and puts two records in it, as version 1 wrote. */
  private static void createVersion1Table(DataSource dataSource, JdbcDialect dialect, String table,
      IdempotencyKey live, IdempotencyKey done, Instant now) throws SQLException {
    String ddl = v1(dialect).replace("${table}", table).replace("${name}", table);
    long micros = now.toEpochMilli() * 1000;
    try (Connection c = dataSource.getConnection()) {
      try (Statement s = c.createStatement()) {
        for (String sql : ddl.split(";\n")) {
          if (!sql.isBlank()) {
            s.execute(sql);
          }
        }
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (scope, tenant,"
          + " idem_key, status, fingerprint, token, lease_until, attempts, outcome_kind,"
          + " outcome_media_type, outcome_body, created_at, updated_at, expires_at)"
          + " VALUES (?, '', ?, ?, ?, 7, ?, 1, ?, ?, ?, ?, ?, ?)")) {
        for (IdempotencyKey key : new IdempotencyKey[] {live, done}) {
          boolean completed = key == done;
          ps.setString(1, key.scope());
          ps.setString(2, key.key());
          ps.setString(3, completed ? "COMPLETED" : "IN_PROGRESS");
          ps.setBytes(4, FP.digest());
          ps.setLong(5, micros + LEASE.toMillis() * 1000);
          ps.setString(6, completed ? "SUCCESS" : null);
          ps.setString(7, completed ? "text/plain" : null);
          ps.setBytes(8, completed ? "v1".getBytes(java.nio.charset.StandardCharsets.UTF_8) : null);
          ps.setLong(9, micros);
          ps.setLong(10, micros);
          ps.setLong(11, micros + RETENTION.toMillis() * 1000);
          ps.executeUpdate();
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void aMissingTableIsASetUpErrorNamingTheFixNotAnOutage(JdbcDialect dialect) {
    String table = Databases.uniqueTable("nope");
    JdbcStore store = JdbcStore.builder(Databases.dataSource(dialect)).dialect(dialect)
        .table(table).build();
    IdempotencyKey key = IdempotencyKey.of("payments", "t1");

    for (org.assertj.core.api.ThrowableAssert.ThrowingCallable call : java.util.List.<
        org.assertj.core.api.ThrowableAssert.ThrowingCallable>of(
        () -> store.claim(new ClaimRequest(key, FP, Instant.now(), LEASE, RETENTION)),
        () -> store.find(key),
        () -> TransactionalOnce.builder(store).build().call(key, FP, Codecs.utf8(),
            tx -> "never runs"))) {
      assertThatThrownBy(call).isInstanceOfSatisfying(dev.once.SchemaMissingException.class,
              e -> assertThat(e.mayHaveBeenApplied()).isFalse())
          .hasMessageContaining("the table " + table + " does not exist")
          .hasMessageContaining("JdbcStore.createSchema()")
          .hasMessageContaining("--table " + table)
          .hasMessageNotContaining("//");
    }
  }

  @ParameterizedTest
  @EnumSource(JdbcDialect.class)
  void createSchemaUpgradesAVersion1TableInPlaceAndTheStoreRefusesItUntilThen(JdbcDialect dialect)
      throws SQLException {
    DataSource dataSource = Databases.dataSource(dialect);
    String table = Databases.uniqueTable("once_v1");
    String scope = "upgrade." + UUID.randomUUID().toString().substring(0, 8);
    IdempotencyKey live = IdempotencyKey.of(scope, "live");
    IdempotencyKey done = IdempotencyKey.of(scope, "done");
    IdempotencyKey fresh = IdempotencyKey.of(scope, "fresh");
    Instant now = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
    try {
      createVersion1Table(dataSource, dialect, table, live, done, now);
      JdbcStore store = JdbcStore.builder(dataSource).dialect(dialect).table(table).build();

      // Not upgraded: every call that touches the new column says what to do, and writes nothing.
      for (org.assertj.core.api.ThrowableAssert.ThrowingCallable call : java.util.List.<
          org.assertj.core.api.ThrowableAssert.ThrowingCallable>of(
          () -> store.claim(new ClaimRequest(fresh, FP, now, LEASE, RETENTION)),
          () -> store.find(done),
          () -> TransactionalOnce.builder(store).build().call(fresh, FP, Codecs.utf8(),
              tx -> "never runs"))) {
        assertThatThrownBy(call).isInstanceOfSatisfying(dev.once.SchemaMissingException.class,
                e -> assertThat(e.mayHaveBeenApplied()).isFalse())
            .hasMessageContaining("the table " + table + " has no column claim_id")
            .hasMessageContaining("JdbcStore.createSchema()")
            .hasMessageContaining("ALTER TABLE " + table + " ADD COLUMN");
      }

      store.createSchema();
      store.createSchema(); // idempotent once upgraded

      // The records of version 1 are kept, with claim id 0 (unknown).
      IdempotencyRecord before = store.find(done).orElseThrow();
      assertThat(before.status()).isEqualTo(Status.COMPLETED);
      assertThat(before.claimId()).isZero();
      assertThat(before.token()).isEqualTo(7);
      assertThat(store.claim(new ClaimRequest(done, FP, now, LEASE, RETENTION)))
          .isInstanceOf(Claim.Replay.class);
      // A live claim made by version 1 is no one's re-sent claim: in progress for everybody.
      assertThat(store.claim(new ClaimRequest(live, FP, now, LEASE, RETENTION)))
          .isEqualTo(new Claim.InProgress(now.plus(LEASE)));
      // New claims keep their id, and a re-sent one is recognised.
      ClaimRequest request = new ClaimRequest(fresh, FP, now, LEASE, RETENTION);
      Claim.Acquired first = (Claim.Acquired) store.claim(request);
      assertThat(store.find(fresh).orElseThrow().claimId()).isEqualTo(request.claimId());
      assertThat(store.claim(request)).isEqualTo(first);
    } finally {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // PostgreSQL, version 3

  private static final JdbcDialect PG = JdbcDialect.POSTGRESQL;

  @Test
  void aVersion2TableIsRefusedWithTheFixThenUpgradedKeepingItsRecordsAndTheirExpiry()
      throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_v2");
    String scope = "upgrade." + UUID.randomUUID().toString().substring(0, 8);
    IdempotencyKey live = IdempotencyKey.of(scope, "live");
    IdempotencyKey done = IdempotencyKey.of(scope, "done");
    IdempotencyKey fresh = IdempotencyKey.of(scope, "fresh");
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    try {
      createVersion1Table(dataSource, PG, table, live, done, now);
      execute(dataSource, POSTGRESQL_V2.replace("${table}", table));
      // More legacy rows than one backfill batch, expired an hour ago.
      execute(dataSource, "INSERT INTO " + table + " (scope, tenant, idem_key, status, fingerprint,"
          + " token, lease_until, attempts, created_at, updated_at, expires_at)"
          + " SELECT '" + scope + "', '', 'old-' || g, 'COMPLETED', decode(repeat('07', 32), 'hex'),"
          + " 1, 0, 1, 0, 0, " + micros(now.minus(Duration.ofHours(1)))
          + " FROM generate_series(1, 12000) g");
      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();

      // Not upgraded: a claim says what to do (version 3 only: claim_id is there) and writes
      // nothing; reads still work.
      assertThatThrownBy(() -> store.claim(new ClaimRequest(fresh, FP, now, LEASE, RETENTION)))
          .isInstanceOfSatisfying(SchemaMissingException.class,
              e -> assertThat(e.mayHaveBeenApplied()).isFalse())
          .hasMessageContaining("the table " + table + " has no column purge_after")
          .hasMessageContaining("JdbcStore.createSchema()")
          .hasMessageContaining("V3__once_records_purge_after.sql")
          .hasMessageNotContaining("V2__once_records_claim_id.sql");
      assertThat(store.find(fresh)).isEmpty();
      assertThat(store.find(done)).isPresent();

      store.createSchema();
      store.createSchema(); // idempotent once upgraded

      assertThat(indexes(dataSource, table)).contains(table + "_purge_idx")
          .doesNotContain(table + "_expires_idx");
      // Every legacy row's floor is its expiry (in batches: 12,002 rows, 5,000 a batch).
      assertThat(count(dataSource, "SELECT count(*) FROM " + table
          + " WHERE purge_after <> expires_at")).isZero();
      assertThat(store.claim(new ClaimRequest(done, FP, now, LEASE, RETENTION)))
          .isInstanceOf(Claim.Replay.class);
      assertThat(store.claim(new ClaimRequest(live, FP, now, LEASE, RETENTION)))
          .isEqualTo(new Claim.InProgress(now.plus(LEASE)));
      Claim.Acquired first = (Claim.Acquired) store.claim(
          new ClaimRequest(fresh, FP, now, LEASE, RETENTION));
      store.complete(fresh, first.token(), Outcome.success("text/plain", new byte[] {1}), now,
          RETENTION);
      // Purging finds the expired legacy rows by their floor, and only them.
      int purged = 0;
      int n;
      while ((n = store.purgeExpired(now, 5000)) > 0) {
        purged += n;
      }
      assertThat(purged).isEqualTo(12_000);
      assertThat(store.find(done)).isPresent();
      assertThat(store.find(fresh)).isPresent();
      assertThat(store.purgeExpired(now.plus(RETENTION), 1000)).isEqualTo(3);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  @Test
  void aFloorLeftOverByAnOlderStoreIsStillPurgedAtItsExpiry() throws SQLException {
    // A store of version 2 still running during an upgrade writes rows without purge_after (0):
    // purged all the same, and createSchema() gives them their floor later.
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_mixed");
    IdempotencyKey key = IdempotencyKey.of("mixed." + UUID.randomUUID(), "k");
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    try {
      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
      store.createSchema();
      execute(dataSource, "INSERT INTO " + table + " (scope, tenant, idem_key, status, fingerprint,"
          + " token, lease_until, attempts, created_at, updated_at, expires_at)"
          + " VALUES ('" + key.scope() + "', '', 'k', 'COMPLETED', decode(repeat('07', 32), 'hex'),"
          + " 1, 0, 1, 0, 0, " + micros(now) + ")");
      assertThat(store.purgeExpired(now.minusNanos(1000), 10)).isZero();
      assertThat(store.purgeExpired(now, 10)).isEqualTo(1);
      assertThat(store.find(key)).isEmpty();
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  @Test
  void aShorterRetentionOrAnEarlierClockLowersTheFloorSoPurgeStillFindsTheRecord()
      throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_floor");
    JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
    store.createSchema();
    try {
      purgeEachAtItsOwnExpiry(store);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  private static void purgeEachAtItsOwnExpiry(JdbcStore store) {
    String scope = "floor." + UUID.randomUUID().toString().substring(0, 8);
    Instant now = Instant.parse("2031-05-01T10:00:00Z");
    Duration day = Duration.ofDays(1);
    IdempotencyKey shorter = IdempotencyKey.of(scope, "shorter");
    IdempotencyKey earlier = IdempotencyKey.of(scope, "earlier");
    IdempotencyKey failed = IdempotencyKey.of(scope, "failed");
    long a = ((Claim.Acquired) store.claim(new ClaimRequest(shorter, FP, now, LEASE, day))).token();
    long b = ((Claim.Acquired) store.claim(new ClaimRequest(earlier, FP, now, LEASE, day))).token();
    long c = ((Claim.Acquired) store.claim(new ClaimRequest(failed, FP, now, LEASE, day))).token();
    Outcome outcome = Outcome.success("text/plain", "x".getBytes(StandardCharsets.UTF_8));

    store.complete(shorter, a, outcome, now, Duration.ofMinutes(1));
    store.completeAll(java.util.List.of(new dev.once.spi.Completion(earlier, b, outcome)),
        now.minus(Duration.ofHours(2)), day); // a clock behind the claim's
    store.fail(failed, c, "boom", now, Duration.ofSeconds(10)); // kept until the lease ends

    Instant beforeAll = now.plus(Duration.ofSeconds(29));
    assertThat(store.purgeExpired(beforeAll, 10)).isZero();
    // Each record goes at its own expiry, a day before the floor its claim wrote.
    assertThat(store.purgeExpired(now.plus(LEASE), 10)).isEqualTo(1);
    assertThat(store.find(failed)).isEmpty();
    assertThat(store.purgeExpired(now.plus(Duration.ofMinutes(1)), 10)).isEqualTo(1);
    assertThat(store.find(shorter)).isEmpty();
    assertThat(store.purgeExpired(now.plus(day).minus(Duration.ofHours(2)), 10)).isEqualTo(1);
    assertThat(store.find(earlier)).isEmpty();
  }

  @Test
  void completionsAndFailuresAreHotUpdatesUnlessAnIndexCoversWhatTheyChange() throws Exception {
    String table = Databases.uniqueTable("once_hot");
    String control = Databases.uniqueTable("once_cold");
    DataSource dataSource = Databases.dataSource(PG);
    try {
      updateTenRecords(table, null);
      // The control: an index on expires_at, as version 1 had (a B-tree here, which blocks HOT
      // on every PostgreSQL; version 1's BRIN did on PostgreSQL 15 and earlier).
      updateTenRecords(control, "CREATE INDEX " + control + "_exp ON " + control + " (expires_at)");

      long[] hot = awaitUpdates(dataSource, table, 10);
      long[] cold = awaitUpdates(dataSource, control, 10);
      assertThat(hot[1]).as("HOT updates of %d", hot[0]).isEqualTo(10);
      assertThat(cold[1]).as("HOT updates of %d, expires_at indexed", cold[0]).isZero();
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
      execute(dataSource, "DROP TABLE IF EXISTS " + control);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // PostgreSQL, version 4: the column order

  /**
   * Version 4's order: first what no completion, failure or heartbeat changes (the checkpoint
   * among them), then the lease, then what a completion or failure changes. PostgreSQL logs an
   * updated row from its first changed byte to its last, so in this order a completion logs from
   * {@code status} on, and a heartbeat from {@code lease_until} on, never the checkpoint.
   */
  private static final java.util.List<String> VERSION_4_ORDER = java.util.List.of("scope", "tenant",
      "idem_key", "fingerprint", "checkpoint_name", "checkpoint_data", "token", "claim_id",
      "created_at", "purge_after", "lease_until", "attempts", "status", "last_error",
      "outcome_kind", "outcome_media_type", "outcome_body", "updated_at", "expires_at");

  /** The order versions 1 to 3 leave a table in. */
  private static final java.util.List<String> VERSION_3_ORDER = java.util.List.of("scope", "tenant",
      "idem_key", "status", "fingerprint", "token", "lease_until", "attempts", "checkpoint_name",
      "checkpoint_data", "outcome_kind", "outcome_media_type", "outcome_body", "last_error",
      "created_at", "updated_at", "expires_at", "claim_id", "purge_after");

  @Test
  void aNewTableHasTheColumnsACompletionChangesLastWhetherCreateSchemaOrAMigrationToolMadeIt()
      throws Exception {
    DataSource dataSource = Databases.dataSource(PG);
    String byStore = Databases.uniqueTable("once_v4");
    String byTool = Databases.uniqueTable("once_v4_tool");
    try {
      JdbcStore.builder(dataSource).dialect(PG).table(byStore).build().createSchema();
      applyAsAMigrationTool(dataSource, byTool, PG.schemaResources());

      for (String table : java.util.List.of(byStore, byTool)) {
        assertThat(columns(dataSource, table)).as(table).isEqualTo(VERSION_4_ORDER);
        assertThat(indexes(dataSource, table)).as(table).containsExactlyInAnyOrder(
            table + "_pkey", table + "_reap_idx", table + "_purge_idx");
        // Idempotent, and the store works on it: a claim, a completion, a replay, a purge.
        applyAsAMigrationTool(dataSource, table, PG.schemaResources());
        JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
        store.createSchema();
        assertThat(columns(dataSource, table)).as(table).isEqualTo(VERSION_4_ORDER);
        purgeEachAtItsOwnExpiry(store);
      }
      // The HOT completions of version 3 stay.
      String hot = Databases.uniqueTable("once_v4_hot");
      try {
        updateTenRecords(hot, null);
        assertThat(columns(dataSource, hot)).isEqualTo(VERSION_4_ORDER);
        assertThat(awaitUpdates(dataSource, hot, 10)[1]).isEqualTo(10);
      } finally {
        execute(dataSource, "DROP TABLE IF EXISTS " + hot);
      }
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + byStore);
      execute(dataSource, "DROP TABLE IF EXISTS " + byTool);
    }
  }

  @Test
  void version4LeavesATableThatHoldsRecordsInItsOrderAndKeepsThem() throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_v3_kept");
    String scope = "kept." + UUID.randomUUID().toString().substring(0, 8);
    IdempotencyKey live = IdempotencyKey.of(scope, "live");
    IdempotencyKey done = IdempotencyKey.of(scope, "done");
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    try {
      createVersion1Table(dataSource, PG, table, live, done, now);
      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
      store.createSchema(); // versions 2 and 3 on a table that holds records: the order stays
      assertThat(columns(dataSource, table)).isEqualTo(VERSION_3_ORDER);

      // Every version again, as a migration tool would: version 4 among them.
      applyAsAMigrationTool(dataSource, table, PG.schemaResources());

      assertThat(columns(dataSource, table)).isEqualTo(VERSION_3_ORDER);
      assertThat(store.claim(new ClaimRequest(done, FP, now, LEASE, RETENTION)))
          .isInstanceOf(Claim.Replay.class);
      assertThat(store.claim(new ClaimRequest(live, FP, now, LEASE, RETENTION)))
          .isEqualTo(new Claim.InProgress(now.plus(LEASE)));
      IdempotencyKey fresh = IdempotencyKey.of(scope, "fresh");
      long token = ((Claim.Acquired) store.claim(
          new ClaimRequest(fresh, FP, now, LEASE, RETENTION))).token();
      store.complete(fresh, token, Outcome.success("text/plain", new byte[] {1}), now, RETENTION);
      assertThat(store.claim(new ClaimRequest(fresh, FP, now, LEASE, RETENTION)))
          .isInstanceOf(Claim.Replay.class);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  /** What may depend on an empty table of version 3, made by hand; version 4 must keep it. */
  enum InUse {
    VIEW("CREATE VIEW ${table}_v AS SELECT scope, idem_key, status FROM ${table}"),
    GRANT("GRANT SELECT ON ${table} TO PUBLIC"),
    INDEX("CREATE INDEX ${table}_by_status ON ${table} (status)"),
    TRIGGER("CREATE FUNCTION ${table}_f() RETURNS trigger LANGUAGE plpgsql AS"
        + " 'BEGIN RETURN NEW; END'; CREATE TRIGGER ${table}_t BEFORE INSERT ON ${table}"
        + " FOR EACH ROW EXECUTE FUNCTION ${table}_f()"),
    FOREIGN_KEY("CREATE TABLE ${table}_ref (scope text COLLATE \"C\", tenant text COLLATE \"C\","
        + " idem_key text COLLATE \"C\", FOREIGN KEY (scope, tenant, idem_key) REFERENCES"
        + " ${table})"),
    ROW_TYPE("CREATE FUNCTION ${table}_g(r ${table}) RETURNS text LANGUAGE sql AS"
        + " 'SELECT r.status'"),
    ARRAY_TYPE("CREATE FUNCTION ${table}_n(r ${table}[]) RETURNS int LANGUAGE sql AS"
        + " 'SELECT cardinality(r)'"),
    EXTRA_COLUMN("ALTER TABLE ${table} ADD COLUMN note text"),
    CHECK("ALTER TABLE ${table} ADD CHECK (attempts > 0)"),
    COMMENT("COMMENT ON COLUMN ${table}.status IS 'ours'"),
    OPTION("ALTER TABLE ${table} SET (fillfactor = 90)"),
    COLUMN_GRANT("GRANT SELECT (scope) ON ${table} TO PUBLIC");

    final String ddl;

    InUse(String ddl) {
      this.ddl = ddl;
    }
  }

  @ParameterizedTest
  @EnumSource(InUse.class)
  void version4LeavesAnEmptyTableThatIsInUseInItsOrder(InUse use) throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_used");
    java.util.List<String> resources = PG.schemaResources();
    try {
      applyAsAMigrationTool(dataSource, table, resources.subList(0, 3));
      execute(dataSource, use.ddl.replace("${table}", table));

      applyAsAMigrationTool(dataSource, table, resources.subList(3, 4));

      // Not remade (a remade table has version 4's order; a view would have failed the drop, a
      // grant, an index or a trigger would have been lost), and it works as it is.
      assertThat(columns(dataSource, table)).startsWith(VERSION_3_ORDER.toArray(new String[0]));
      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
      purgeEachAtItsOwnExpiry(store);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table + "_ref");
      execute(dataSource, "DROP TABLE IF EXISTS " + table + " CASCADE");
      execute(dataSource, "DROP FUNCTION IF EXISTS " + table + "_f()");
      execute(dataSource, "DROP FUNCTION IF EXISTS " + table + "_n");
    }
  }

  /**
   * A migration tool runs version 4 in a REPEATABLE READ transaction while an instance inserts
   * the first record: its snapshot, taken before it had the table's lock, cannot see the record
   * committed while it waited (found by review: the table was dropped with the record).
   */
  @Test
  void version4UnderRepeatableReadKeepsARecordCommittedWhileItWaitedForTheLock() throws Exception {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_rr");
    java.util.List<String> resources = PG.schemaResources();
    try {
      applyAsAMigrationTool(dataSource, table, resources.subList(0, 3));
      try (Connection writer = dataSource.getConnection();
          Connection migrator = dataSource.getConnection()) {
        writer.setAutoCommit(false);
        try (Statement s = writer.createStatement()) {
          s.executeUpdate("INSERT INTO " + table + " (scope, tenant, idem_key, status, fingerprint,"
              + " token, lease_until, attempts, created_at, updated_at, expires_at) VALUES ('s',"
              + " 't', 'k', 'COMPLETED', decode(repeat('00', 32), 'hex'), 1, 1, 1, 1, 1, 1)");
        }
        long migratorPid = count(migrator, "SELECT pg_backend_pid()");
        migrator.setAutoCommit(false);
        migrator.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        String v4 = dev.once.jdbc.internal.SchemaScript.text(resources.get(3),
            dev.once.jdbc.internal.TableName.of(table));
        java.util.concurrent.CompletableFuture<Void> migration =
            java.util.concurrent.CompletableFuture.runAsync(() -> {
              try (Statement s = migrator.createStatement()) {
                s.execute(v4);
                migrator.commit();
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
            });
        // Version 4 waits for the table's lock, held by the uncommitted insert.
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (count(dataSource, "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid = "
            + migratorPid) == 0) {
          assertThat(System.nanoTime()).as("version 4 waits for the lock").isLessThan(deadline);
          Thread.sleep(20); // polling pg_locks; the deadline bounds it
        }
        writer.commit(); // the first record
        migration.get(30, java.util.concurrent.TimeUnit.SECONDS);
      }
      assertThat(count(dataSource, "SELECT count(*) FROM " + table)).isEqualTo(1);
      assertThat(columns(dataSource, table)).isEqualTo(VERSION_3_ORDER);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  @Test
  void version4LeavesAnEmptyTableOfTheSameNameThatIsNotAStoreTable() throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_other");
    try {
      execute(dataSource, "CREATE TABLE " + table + " (id bigint, lease_until bigint,"
          + " purge_after bigint)");

      applyAsAMigrationTool(dataSource, table, PG.schemaResources().subList(3, 4));

      assertThat(columns(dataSource, table)).containsExactly("id", "lease_until", "purge_after");
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  /** Default privileges that grant on new tables give the remade table the same grants. */
  @Test
  void createSchemaGivesANewTableVersion4sOrderWhereDefaultPrivilegesGrantOnNewTables()
      throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_defacl");
    String role = table + "_r";
    try {
      execute(dataSource, "CREATE ROLE " + role);
      execute(dataSource, "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO " + role);

      JdbcStore.builder(dataSource).dialect(PG).table(table).build().createSchema();

      assertThat(columns(dataSource, table)).isEqualTo(VERSION_4_ORDER);
      assertThat(count(dataSource, "SELECT count(*) FROM pg_class WHERE oid = to_regclass('"
          + table + "') AND has_table_privilege('" + role + "', oid, 'SELECT')")).isEqualTo(1);
    } finally {
      execute(dataSource, "ALTER DEFAULT PRIVILEGES REVOKE SELECT ON TABLES FROM " + role);
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
      execute(dataSource, "DROP ROLE IF EXISTS " + role);
    }
  }

  @Test
  void createSchemaGivesANewMixedCaseTableVersion4sOrder() throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = "Once_" + Databases.uniqueTable("Mixed");
    try {
      JdbcStore.builder(dataSource).dialect(PG).table(table).build().createSchema();

      assertThat(columns(dataSource, table)).isEqualTo(VERSION_4_ORDER);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  @Test
  void instancesCreatingTheSameNewTableAtOnceAllSucceedAndItHasVersion4sOrder() throws Exception {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_race");
    int instances = 6;
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(instances);
    try {
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(instances);
      java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
      for (int i = 0; i < instances; i++) {
        done.add(pool.submit(() -> {
          JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
          start.await();
          store.createSchema();
          return null;
        }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
      assertThat(columns(dataSource, table)).isEqualTo(VERSION_4_ORDER);
    } finally {
      pool.shutdownNow();
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  @Test
  void version5LeavesNoCheckOfVersion1sOnANewTableWhetherCreateSchemaOrAMigrationToolMadeIt()
      throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String byStore = Databases.uniqueTable("once_v5");
    String byTool = Databases.uniqueTable("once_v5_tool");
    try {
      JdbcStore.builder(dataSource).dialect(PG).table(byStore).build().createSchema();
      applyAsAMigrationTool(dataSource, byTool, PG.schemaResources());

      for (String table : java.util.List.of(byStore, byTool)) {
        assertThat(checks(dataSource, table)).as(table).isEmpty();
        assertThat(columns(dataSource, table)).as(table).isEqualTo(VERSION_4_ORDER);
        JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
        store.createSchema(); // idempotent
        purgeEachAtItsOwnExpiry(store);
      }
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + byStore);
      execute(dataSource, "DROP TABLE IF EXISTS " + byTool);
    }
  }

  /**
   * A table of an earlier release, renamed since it was made (its checks' names still carry the
   * old name), with a check of its owner's: createSchema() drops version 1's three and keeps the
   * owner's and every record.
   */
  @Test
  void version5DropsVersion1sChecksFromAnExistingTableAndKeepsItsRecordsAndAnyoneElsesCheck()
      throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String made = Databases.uniqueTable("once_v1_made");
    String table = Databases.uniqueTable("once_v1_renamed");
    String scope = "checks." + UUID.randomUUID().toString().substring(0, 8);
    IdempotencyKey live = IdempotencyKey.of(scope, "live");
    IdempotencyKey done = IdempotencyKey.of(scope, "done");
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    try {
      createVersion1Table(dataSource, PG, made, live, done, now);
      execute(dataSource, "ALTER TABLE " + made + " RENAME TO " + table);
      execute(dataSource, "ALTER TABLE " + table + " ADD CONSTRAINT " + table
          + "_attempts CHECK (attempts > 0)");
      assertThat(checks(dataSource, table)).hasSize(4);

      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
      store.createSchema();
      store.createSchema(); // idempotent

      assertThat(checks(dataSource, table)).containsExactly("CHECK ((attempts > 0))");
      assertThat(store.claim(new ClaimRequest(done, FP, now, LEASE, RETENTION)))
          .isInstanceOf(Claim.Replay.class);
      assertThat(store.claim(new ClaimRequest(live, FP, now, LEASE, RETENTION)))
          .isEqualTo(new Claim.InProgress(now.plus(LEASE)));
      // As a migration tool would run it again: nothing left to drop, nothing else touched.
      applyAsAMigrationTool(dataSource, table, PG.schemaResources().subList(4, 5));
      assertThat(checks(dataSource, table)).containsExactly("CHECK ((attempts > 0))");
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + made);
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  /** Instances of the new release starting at once on a table that still has the checks. */
  @Test
  void instancesUpgradingTheSameTableAtOnceAllSucceedAndItLosesVersion1sChecks() throws Exception {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_v5_race");
    String scope = "race." + UUID.randomUUID().toString().substring(0, 8);
    Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    int instances = 6;
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(instances);
    try {
      createVersion1Table(dataSource, PG, table, IdempotencyKey.of(scope, "live"),
          IdempotencyKey.of(scope, "done"), now);
      JdbcStore.builder(dataSource).dialect(PG).table(table).build().createSchema();
      // Back to the checks a table of the previous release has.
      execute(dataSource, "ALTER TABLE " + table
          + " ADD CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),"
          + " ADD CHECK (octet_length(fingerprint) = 32),"
          + " ADD CHECK (outcome_kind IN ('SUCCESS', 'FAILURE'))");
      assertThat(checks(dataSource, table)).hasSize(3);
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(instances);
      java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
      for (int i = 0; i < instances; i++) {
        done.add(pool.submit(() -> {
          JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
          start.await();
          store.createSchema();
          return null;
        }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
      assertThat(checks(dataSource, table)).isEmpty();
    } finally {
      pool.shutdownNow();
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  /**
   * A table its owner migrated to version 4 (the previous release), used by an application role
   * with only DML grants that calls createSchema() at start, as it could before version 5 (found by
   * review: "must be owner of table").
   */
  @Test
  void createSchemaByARoleThatDoesNotOwnTheTableSucceedsAndLeavesTheChecks() throws Exception {
    DataSource owner = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_not_owner");
    String role = "once_app_" + UUID.randomUUID().toString().substring(0, 6);
    HikariDataSource app = null;
    try {
      applyAsAMigrationTool(owner, table, PG.schemaResources().subList(0, 4));
      execute(owner, "CREATE ROLE " + role + " LOGIN PASSWORD 'x'");
      execute(owner, "GRANT SELECT, INSERT, UPDATE, DELETE ON " + table + " TO " + role);
      HikariConfig config = new HikariConfig();
      String url = TestPostgres.jdbcUrl().replaceAll("user=[^&]*", "user=" + role)
          .replaceAll("password=[^&]*", "password=x");
      if (!url.contains("user=")) {
        url += (url.contains("?") ? "&" : "?") + "user=" + role + "&password=x";
      }
      config.setJdbcUrl(url);
      config.setMaximumPoolSize(2);
      app = new HikariDataSource(config);
      JdbcStore store = JdbcStore.builder(app).dialect(PG).table(table).build();

      store.createSchema();

      assertThat(checks(owner, table)).hasSize(3);
      assertThat(store.claim(new ClaimRequest(IdempotencyKey.of("app", "k"), FP, Instant.now(),
          LEASE, RETENTION))).isInstanceOf(Claim.Acquired.class);
    } finally {
      if (app != null) {
        app.close();
      }
      execute(owner, "DROP TABLE IF EXISTS " + table);
      execute(owner, "DROP ROLE IF EXISTS " + role);
    }
  }

  /**
   * A new instance starts while a transaction (a long report, pg_dump) holds the table: its
   * upgrade must not make every running instance's claims queue behind the ALTER TABLE's lock
   * request for as long as that transaction lasts (found by review). It gives up, and the next
   * createSchema() drops the checks.
   */
  @Test
  void createSchemaWhileATransactionHoldsTheTableDoesNotStallClaimsAndDropsTheChecksNextTime()
      throws Exception {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_held");
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(2);
    try {
      applyAsAMigrationTool(dataSource, table, PG.schemaResources().subList(0, 4));
      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
      try (Connection holder = dataSource.getConnection(); Statement s = holder.createStatement()) {
        holder.setAutoCommit(false);
        s.execute("SELECT count(*) FROM " + table);
        java.util.concurrent.Future<?> upgrade = pool.submit(() -> {
          store.createSchema();
          return null;
        });
        // Until the ALTER waits for the lock (or has given up already).
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!upgrade.isDone() && count(dataSource, "SELECT count(*) FROM pg_locks WHERE"
            + " relation = to_regclass('" + table + "') AND NOT granted") == 0
            && System.nanoTime() < deadline) {
          Thread.onSpinWait();
        }
        java.util.concurrent.Future<Claim> claim = pool.submit(() -> store.claim(new ClaimRequest(
            IdempotencyKey.of("held", "k"), FP, Instant.now(), LEASE, RETENTION)));
        try {
          assertThat(claim.get(10, java.util.concurrent.TimeUnit.SECONDS))
              .isInstanceOf(Claim.Acquired.class);
          upgrade.get(10, java.util.concurrent.TimeUnit.SECONDS);
        } finally {
          holder.rollback();
        }
      }
      assertThat(checks(dataSource, table)).hasSize(3);
      store.createSchema();
      assertThat(checks(dataSource, table)).isEmpty();
    } finally {
      pool.shutdownNow();
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  /** What the checks of version 1 refused, the store refuses when it reads the row. */
  enum ChangedByHand {
    STATUS("status = 'DONE'", "status 'DONE'"),
    FINGERPRINT("fingerprint = '\\x0102'", "a fingerprint of 2 bytes, not 32"),
    OUTCOME_KIND("outcome_kind = 'OK'", "outcome_kind 'OK'");

    final String set;
    final String named;

    ChangedByHand(String set, String named) {
      this.set = set;
      this.named = named;
    }
  }

  @ParameterizedTest
  @EnumSource(ChangedByHand.class)
  void aRowChangedByHandToWhatNoVersionWritesIsRefusedByNameAndNothingRuns(ChangedByHand change)
      throws SQLException {
    DataSource dataSource = Databases.dataSource(PG);
    String table = Databases.uniqueTable("once_by_hand");
    IdempotencyKey key = IdempotencyKey.of("hand", "k");
    try {
      JdbcStore store = JdbcStore.builder(dataSource).dialect(PG).table(table).build();
      store.createSchema();
      dev.once.Once once = dev.once.Once.builder(store).build();
      once.call(key, FP, Codecs.utf8(), a -> "first");
      execute(dataSource, "UPDATE " + table + " SET " + change.set);

      java.util.concurrent.atomic.AtomicInteger runs = new java.util.concurrent.atomic.AtomicInteger();
      assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), a -> "again" + runs.incrementAndGet()))
          .hasStackTraceContaining("the row of " + key + " is not a record of Once")
          .hasStackTraceContaining(change.named);
      assertThatThrownBy(() -> store.find(key)).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(change.named).hasMessageContaining("correct or delete the row");
      assertThat(runs).hasValue(0);
    } finally {
      execute(dataSource, "DROP TABLE IF EXISTS " + table);
    }
  }

  /** The definitions of the table's CHECK constraints. */
  private static java.util.List<String> checks(DataSource dataSource, String table)
      throws SQLException {
    return strings(dataSource, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid"
        + " = to_regclass(?) AND contype = 'c' ORDER BY conname", table);
  }

  /** Each script whole, in a transaction of its own, as Flyway runs a migration. */
  private static void applyAsAMigrationTool(DataSource dataSource, String table,
      java.util.List<String> resources) throws SQLException {
    dev.once.jdbc.internal.TableName name = dev.once.jdbc.internal.TableName.of(table);
    for (String resource : resources) {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        c.setAutoCommit(false);
        s.execute(dev.once.jdbc.internal.SchemaScript.text(resource, name));
        c.commit();
        c.setAutoCommit(true);
      }
    }
  }

  /** The table's columns in their physical order. */
  private static java.util.List<String> columns(DataSource dataSource, String table)
      throws SQLException {
    return strings(dataSource, "SELECT attname FROM pg_attribute WHERE attrelid ="
        + " to_regclass(?) AND attnum > 0 AND NOT attisdropped ORDER BY attnum", table);
  }

  /**
   * Creates {@code table} (and runs {@code extraDdl}), claims ten keys, completes eight and fails
   * two, through a pool of one connection that is closed at the end: its backend exits and
   * reports its statistics.
   */
  private static void updateTenRecords(String table, String extraDdl) throws SQLException {
    HikariConfig config = Databases.config("once-hot");
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    config.setMaximumPoolSize(1);
    config.setMinimumIdle(1);
    try (HikariDataSource one = new HikariDataSource(config)) {
      JdbcStore store = JdbcStore.builder(one).dialect(PG).table(table).build();
      store.createSchema();
      if (extraDdl != null) {
        execute(one, extraDdl);
      }
      Instant now = Instant.now();
      for (int i = 0; i < 10; i++) {
        IdempotencyKey key = IdempotencyKey.of("hot", "k" + i);
        long token = ((Claim.Acquired) store.claim(
            new ClaimRequest(key, FP, now, LEASE, RETENTION))).token();
        Instant later = now.plusMillis(1 + i);
        if (i < 8) {
          store.complete(key, token, Outcome.success("text/plain", new byte[] {(byte) i}), later,
              RETENTION);
        } else {
          store.fail(key, token, "boom", later, RETENTION);
        }
      }
    }
  }

  /** Waits for the statistics to count {@code updates}; returns updates and HOT updates. */
  private static long[] awaitUpdates(DataSource dataSource, String table, long updates)
      throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (true) {
      long[] seen = new long[2];
      try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
          "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid ="
              + " to_regclass(?)")) {
        ps.setString(1, table);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            seen = new long[] {rs.getLong(1), rs.getLong(2)};
          }
        }
      }
      if (seen[0] >= updates || System.nanoTime() > deadline) {
        assertThat(seen[0]).as("updates counted for %s", table).isEqualTo(updates);
        return seen;
      }
      Thread.sleep(100); // polling the statistics collector; the deadline bounds it
    }
  }

  private static java.util.List<String> indexes(DataSource dataSource, String table)
      throws SQLException {
    return strings(dataSource,
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = to_regclass(?)", table);
  }

  /** The first column of every row {@code sql} answers for {@code table}. */
  private static java.util.List<String> strings(DataSource dataSource, String sql, String table)
      throws SQLException {
    java.util.List<String> names = new java.util.ArrayList<>();
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
    }
    return names;
  }

  private static long count(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static long count(DataSource dataSource, String sql) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return count(c, sql);
    }
  }

  private static void execute(DataSource dataSource, String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static long micros(Instant instant) {
    return instant.getEpochSecond() * 1_000_000 + instant.getNano() / 1000;
  }
}
