package dev.once.sqs;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.testkit.TestPostgres;
import java.util.UUID;

/**
 * PostgreSQL for the tests, started once per JVM: embedded (zonky), or the server at
 * {@code ONCE_POSTGRES_URL} if set (then with a table of this run's own).
 */
final class Postgres {

  static final HikariDataSource DATA_SOURCE;
  static final JdbcStore STORE;
  /** The store's table (unqualified). */
  static final String TABLE;

  static {
    HikariConfig config = new HikariConfig();
    config.setPoolName("once-sqs-postgres");
    config.setMaximumPoolSize(10);
    config.setMinimumIdle(2);
    config.setConnectionTimeout(10_000);
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    String table = TestPostgres.isExternal()
        ? "once_sqs_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8)
        : JdbcStore.DEFAULT_TABLE;
    DATA_SOURCE = new HikariDataSource(config);
    TABLE = table;
    STORE = JdbcStore.builder(DATA_SOURCE).dialect(JdbcDialect.POSTGRESQL).table(table).build();
    STORE.createSchema();
    if (!table.equals(JdbcStore.DEFAULT_TABLE)) {
      TestPostgres.dropAtExit(DATA_SOURCE, table);
    }
  }

  private Postgres() {}
}
