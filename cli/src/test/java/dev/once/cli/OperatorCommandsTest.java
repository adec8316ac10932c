package dev.once.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.cli.demo.CommandRun;
import dev.once.cli.store.StoreUris;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.UUID;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code once schema}, {@code inspect}, {@code purge} and {@code reap} on SQLite and PostgreSQL. */
class OperatorCommandsTest {

  @TempDir
  Path tmp;

  /** Two days ago: records written then are past the default 24 h retention now. */
  private static final Clock TWO_DAYS_AGO =
      Clock.fixed(Instant.now().minus(Duration.ofDays(2)), ZoneOffset.UTC);

  @Nested
  class Schema {

    @Test
    void printsEachDialectsDdlWithoutConnecting() {
      CommandRun sqlite = CommandRun.run("schema", "--store", "sqlite:" + tmp.resolve("x.db"));
      // Port 1 refuses connections: printing must not try.
      CommandRun postgres = CommandRun.run("schema", "--store", "postgres://u:p@127.0.0.1:1/db");
      CommandRun mariadb = CommandRun.run("schema", "--store", "mariadb://u@127.0.0.1:1/db",
          "--table", "app.idem");

      assertThat(sqlite.exitCode()).as(sqlite.err()).isZero();
      assertThat(sqlite.out()).isEqualToIgnoringNewLines(
          JdbcDialect.SQLITE.schema(JdbcStore.DEFAULT_TABLE));
      assertThat(postgres.exitCode()).as(postgres.err()).isZero();
      assertThat(postgres.out()).contains("CREATE TABLE IF NOT EXISTS once_records", "BRIN")
          .doesNotContain("${");
      assertThat(mariadb.out()).contains("CREATE TABLE IF NOT EXISTS app.idem");
      assertThat(tmp.resolve("x.db")).doesNotExist();
    }

    @Test
    void appliesTwiceHarmlesslyAndTheStoreWorksAfterwards() {
      Path file = tmp.resolve("applied.db");

      CommandRun first = CommandRun.run("schema", "--apply", "--store", "sqlite:" + file);
      CommandRun second = CommandRun.run("schema", "--apply", "--store", "sqlite:" + file);

      assertThat(first.exitCode()).as(first.err()).isZero();
      assertThat(second.exitCode()).as(second.err()).isZero();
      assertThat(first.out()).contains("Schema applied: SQLite file " + file);
      try (JdbcStore store = JdbcStore.sqlite(file)) {
        Once.builder(store).build().call(IdempotencyKey.of("s", "k"), Fingerprint.of("x"),
            Codecs.utf8(), attempt -> "ok");
        assertThat(store.find(IdempotencyKey.of("s", "k"))).isPresent();
      }
    }

    @Test
    void refusesStoresWithoutSqlAndBadTableNames() {
      CommandRun memory = CommandRun.run("schema", "--store", "memory:");
      CommandRun badTable = CommandRun.run("schema", "--table", "x; DROP TABLE y");

      assertThat(memory.exitCode()).isEqualTo(2);
      assertThat(memory.err().strip()).isEqualTo("once schema: the store memory: has no "
          + "schema (schema applies to sqlite:, postgres:, mariadb:, jdbc: and dynamodb: stores)");
      assertThat(badTable.exitCode()).isEqualTo(2);
      assertThat(badTable.err()).startsWith("once schema: --table: ").doesNotContain("\tat ");
    }
  }

  @Nested
  class Inspect {

    @Test
    void showsEveryFieldOfACompletedRecordAndExitsOneForAMissingKey() {
      Path file = tmp.resolve("once.db");
      try (JdbcStore store = JdbcStore.sqlite(file)) {
        store.createSchema();
        Once.builder(store).build().call(IdempotencyKey.of("payments.charge", "acme", "order-17"),
            Fingerprint.of("amount=100"), Codecs.utf8(), attempt -> "ch_123");
      }

      CommandRun found = CommandRun.run("inspect", "--store", "sqlite:" + file,
          "--scope", "payments.charge", "--tenant", "acme", "order-17");
      CommandRun mixed = CommandRun.run("inspect", "--store", "sqlite:" + file,
          "--scope", "payments.charge", "--tenant", "acme", "order-17", "order-18");

      assertThat(found.exitCode()).as(found.err()).isZero();
      assertThat(found.out()).contains("scope payments.charge, tenant acme, key order-17",
          "status       COMPLETED", "attempts     1", "outcome      SUCCESS, text/plain",
          "body         ch_123", "checkpoint   none",
          "fingerprint  " + Fingerprint.of("amount=100").hex(), "expires");
      assertThat(mixed.exitCode()).isEqualTo(1);
      assertThat(mixed.out()).contains("key order-18", "no record (the key behaves as new)");
    }

    @Test
    void printsJsonForScriptsIncludingAHeldLease() {
      Path file = tmp.resolve("once.db");
      IdempotencyKey key = IdempotencyKey.of("orders", "o-1");
      long token;
      try (JdbcStore store = JdbcStore.sqlite(file)) {
        store.createSchema();
        token = ((dev.once.spi.Claim.Acquired) store.claim(new ClaimRequest(key,
            Fingerprint.of("x"), Instant.now(), Duration.ofHours(1), Duration.ofHours(24))))
            .token();
      }

      CommandRun run = CommandRun.run("inspect", "--json", "--store", "sqlite:" + file,
          "--scope", "orders", "o-1");

      assertThat(run.exitCode()).as(run.err()).isZero();
      assertThat(run.out().strip()).startsWith("{\"scope\":\"orders\",\"tenant\":\"\","
              + "\"key\":\"o-1\",\"found\":true,\"status\":\"IN_PROGRESS\",\"token\":" + token
              + ",\"attempts\":1,")
          .contains("\"leaseHeld\":true", "\"outcomeKind\":null").endsWith("}");
    }

    @Test
    void aMissingFileIsAnErrorAndIsNotCreated() {
      Path file = tmp.resolve("absent/once.db");

      CommandRun run = CommandRun.run("inspect", "--store", "sqlite:" + file, "--scope", "s", "k");

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err().strip()).isEqualTo("once inspect: no store at " + file
          + "; create it with: once schema --apply --store sqlite:" + file
          + " (or run: once demo)");
      assertThat(file.getParent()).doesNotExist();
    }

    @Test
    void aFileWithoutTheTableIsAnErrorNamingTheFix() throws Exception {
      Path file = tmp.resolve("empty.db");
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
           Statement s = c.createStatement()) {
        s.execute("CREATE TABLE other (x INTEGER)");
      }

      CommandRun run = CommandRun.run("inspect", "--store", "sqlite:" + file, "--scope", "s", "k");

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err()).startsWith("once inspect: no table once_records at sqlite:" + file)
          .contains("create it with: once schema --apply --store sqlite:" + file)
          .doesNotContain("\tat ");
    }

    @Test
    void anInvalidKeyIsAUsageError() {
      CommandRun run = CommandRun.run("inspect", "--store", "memory:", "--scope", "s",
          "x".repeat(1000));

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err()).startsWith("once inspect: ").doesNotContain("\tat ");
    }
  }

  @Nested
  class PurgeAndReap {

    @Test
    void onSqliteEachPassCountsWhatItDidAndLeavesLiveRecords() throws Exception {
      Path file = tmp.resolve("once.db");
      try (JdbcStore store = JdbcStore.sqlite(file)) {
        store.createSchema();
        seed(store);
      }
      String uri = "sqlite:" + file;

      CommandRun reap = CommandRun.run("reap", "--store", uri, "--batch", "2");
      CommandRun purge = CommandRun.run("purge", "--store", uri, "--batch", "2");
      CommandRun again = CommandRun.run("purge", "--store", uri, "--json");

      assertThat(reap.exitCode()).as(reap.err()).isZero();
      assertThat(reap.out()).startsWith("Reaped 3 stale leases in ");
      assertThat(purge.exitCode()).as(purge.err()).isZero();
      assertThat(purge.out()).startsWith("Purged 5 expired records in ");
      assertThat(again.out()).startsWith("{\"purged\":0,\"millis\":");
      try (JdbcStore store = JdbcStore.sqlite(file)) {
        assertThat(store.find(IdempotencyKey.of("live", "k"))).isPresent();
        assertThat(store.find(IdempotencyKey.of("stale", "k0"))).get()
            .satisfies(r -> assertThat(r.status()).isEqualTo(Status.FAILED));
      }
    }

    @Test
    void onPostgresTheSamePassesWork() {
      String table = "once_ops_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
      String url = postgresUrl();
      CommandRun applied = CommandRun.run("schema", "--apply", "--store", url, "--table", table);
      assertThat(applied.exitCode()).as(applied.err()).isZero();
      try (StoreUris.OpenStore opened = StoreUris.open(StoreUris.parse(url), 2, table)) {
        seed(opened.store());
      }

      CommandRun reap = CommandRun.run("reap", "--store", url, "--table", table);
      CommandRun purge = CommandRun.run("purge", "--store", url, "--table", table);
      CommandRun inspect = CommandRun.run("inspect", "--store", url, "--table", table,
          "--scope", "stale", "k1");

      assertThat(reap.out()).as(reap.err()).startsWith("Reaped 3 stale leases");
      assertThat(purge.out()).as(purge.err()).startsWith("Purged 5 expired records");
      assertThat(inspect.out()).as(inspect.err()).contains("status       FAILED",
          "last error   lease expired");
    }

    @Test
    void aMissingTableOnPostgresIsOneLine() {
      CommandRun run = CommandRun.run("purge", "--store", postgresUrl(), "--table", "no_such");

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err()).startsWith("once purge: no table no_such at ")
          .contains("once schema --apply").doesNotContain("\tat ")
          // The hint names the table, else it would create the default one.
          .contains(" --table no_such");
    }

    @Test
    void anUnknownCommandNamesTheCommandsAndSuggestsTheClosest() {
      CommandRun typo = CommandRun.run("dmeo");
      CommandRun unknown = CommandRun.run("frobnicate");

      assertThat(typo.exitCode()).isEqualTo(2);
      assertThat(typo.err().strip()).startsWith("once: unknown command 'dmeo', did you mean demo")
          .contains("the commands are demo, schema, inspect");
      assertThat(unknown.exitCode()).isEqualTo(2);
      assertThat(unknown.err().strip()).startsWith("once: unknown command 'frobnicate'; the "
          + "commands are ").doesNotContain("\n");
    }

    @Test
    void aBadBatchIsAUsageError() {
      CommandRun run = CommandRun.run("purge", "--store", "memory:", "--batch", "0");

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err().strip())
          .isEqualTo("once purge: --batch must be between 1 and 100000, was 0");
    }

    /** 5 records past retention, 3 claims with an expired lease, 1 live record. */
    private void seed(IdempotencyStore store) {
      Once old = Once.builder(store).clock(TWO_DAYS_AGO).build();
      for (int i = 0; i < 5; i++) {
        old.call(IdempotencyKey.of("old", "k" + i), Fingerprint.of("x"), Codecs.utf8(), a -> "v");
      }
      Instant anHourAgo = Instant.now().minus(Duration.ofHours(1));
      for (int i = 0; i < 3; i++) {
        store.claim(new ClaimRequest(IdempotencyKey.of("stale", "k" + i), Fingerprint.of("x"),
            anHourAgo, Duration.ofMinutes(1), Duration.ofHours(24)));
      }
      Once.builder(store).build().call(IdempotencyKey.of("live", "k"), Fingerprint.of("x"),
          Codecs.utf8(), a -> "v");
    }
  }

  private static String postgresUrl() {
    String url = System.getenv("ONCE_POSTGRES_URL");
    return url != null && !url.isBlank() ? url : dev.once.testkit.TestPostgres.jdbcUrl();
  }

}
