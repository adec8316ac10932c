package dev.once.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * PostgreSQL for the tests, started once per JVM: embedded (zonky), or the server at
 * {@code ONCE_POSTGRES_URL} if set (then with a table of this run's own).
 */
final class Postgres {

  static final HikariDataSource DATA_SOURCE;
  static final JdbcStore STORE;

  static {
    String url = System.getenv("ONCE_POSTGRES_URL");
    HikariConfig config = new HikariConfig();
    config.setPoolName("once-kafka-postgres");
    config.setMaximumPoolSize(10);
    config.setMinimumIdle(2);
    config.setConnectionTimeout(10_000);
    String table;
    if (url != null && !url.isBlank()) {
      config.setJdbcUrl(url);
      table = "once_kafka_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    } else {
      EmbeddedPostgres pg;
      try {
        pg = EmbeddedPostgres.builder()
            // Test data is disposable: trade durability for speed.
            .setServerConfig("fsync", "off")
            .setServerConfig("synchronous_commit", "off")
            .setServerConfig("full_page_writes", "off")
            .start();
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not start", e);
      }
      config.setJdbcUrl(pg.getJdbcUrl("postgres", "postgres"));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          pg.close();
        } catch (IOException e) {
          // exiting anyway
        }
      }));
      table = JdbcStore.DEFAULT_TABLE;
    }
    DATA_SOURCE = new HikariDataSource(config);
    STORE = JdbcStore.builder(DATA_SOURCE).dialect(JdbcDialect.POSTGRESQL).table(table).build();
    STORE.createSchema();
    if (!table.equals(JdbcStore.DEFAULT_TABLE)) {
      dropAtExit(table);
    }
  }

  private Postgres() {}

  static void dropAtExit(String table) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try (Connection c = DATA_SOURCE.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      } catch (SQLException | RuntimeException e) {
        // best effort: a leftover test table is harmless
      }
    }));
  }
}
