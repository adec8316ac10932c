package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A table made by the first version of the schema (no {@code claim_id}), as users of the previous
 * release have it: the store refuses it with a message naming the fix, and {@code createSchema()}
 * upgrades it in place, keeping its records.
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
}
