package dev.once.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.internal.ClaimOrder;
import dev.once.testkit.TestPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The real databases the tests run against, started or connected once per JVM and shared by all
 * test classes. Each run uses tables of its own.
 *
 * <ul>
 *   <li>PostgreSQL: embedded (zonky), or the server at {@code ONCE_POSTGRES_URL} if set.
 *   <li>MariaDB: the server at {@code ONCE_MARIADB_URL}, default
 *       {@code jdbc:mariadb://127.0.0.1:3306/test} as root with no password. Unreachable is a
 *       failure, never a skip.
 *   <li>SQLite: a file in a temporary directory.
 * </ul>
 */
final class Databases {

  /** Connections per pool: the races use 16 threads, and a claim holds one connection. */
  static final int POOL_SIZE = 20;

  private static final String RUN = UUID.randomUUID().toString().replace("-", "").substring(0, 8);

  private Databases() {}

  /** A table name no other run uses. */
  static String uniqueTable(String prefix) {
    return prefix + "_" + RUN + "_" + UUID.randomUUID().toString().substring(0, 4);
  }

  // --------------------------------------------------------------------------------------------

  static final class Postgres {
    static final HikariDataSource DATA_SOURCE;
    static final String TABLE;
    static final JdbcStore STORE;
    /** The same table, every claim reading before it inserts (see {@code ClaimOrder}). */
    static final JdbcStore READ_FIRST_STORE;

    static {
      HikariConfig config = config("once-postgres");
      config.setJdbcUrl(TestPostgres.jdbcUrl());
      TABLE = TestPostgres.isExternal() ? uniqueTable("once_test") : JdbcStore.DEFAULT_TABLE;
      DATA_SOURCE = new HikariDataSource(config);
      STORE = JdbcStore.builder(DATA_SOURCE).dialect(JdbcDialect.POSTGRESQL).table(TABLE).build();
      READ_FIRST_STORE = JdbcStore.builder(DATA_SOURCE).dialect(JdbcDialect.POSTGRESQL)
          .table(TABLE).claimOrder(ClaimOrder.fixed(true)).build();
      STORE.createSchema();
      if (!TABLE.equals(JdbcStore.DEFAULT_TABLE)) {
        dropAtExit(DATA_SOURCE, TABLE);
      }
    }

    private Postgres() {}
  }

  // --------------------------------------------------------------------------------------------

  static final class MariaDb {
    static final String URL = System.getenv().getOrDefault("ONCE_MARIADB_URL",
        "jdbc:mariadb://127.0.0.1:3306/test");
    static final String USER = System.getenv().getOrDefault("ONCE_MARIADB_USER", "root");
    static final String PASSWORD = System.getenv().getOrDefault("ONCE_MARIADB_PASSWORD", "");
    static final HikariDataSource DATA_SOURCE;
    static final String TABLE = uniqueTable("once_test");
    static final JdbcStore STORE;

    static {
      DATA_SOURCE = dataSource("once-mariadb");
      STORE = JdbcStore.builder(DATA_SOURCE).dialect(JdbcDialect.MARIADB).table(TABLE).build();
      STORE.createSchema();
      dropAtExit(DATA_SOURCE, TABLE);
    }

    /** A new pool on the server; fails loudly when the server is not there. */
    static HikariDataSource dataSource(String name) {
      HikariConfig config = config(name);
      config.setJdbcUrl(URL);
      config.setUsername(USER);
      config.setPassword(PASSWORD);
      config.setInitializationFailTimeout(5_000);
      try {
        return new HikariDataSource(config);
      } catch (RuntimeException e) {
        throw new IllegalStateException("MariaDB is not reachable at " + URL + " as " + USER
            + ": the MariaDB tests need a running server (CI installs and starts one; locally"
            + " start mariadb, or point ONCE_MARIADB_URL/ONCE_MARIADB_USER/ONCE_MARIADB_PASSWORD"
            + " at one). Cause: " + e.getMessage(), e);
      }
    }

    private MariaDb() {}
  }

  // --------------------------------------------------------------------------------------------

  static final class Sqlite {
    static final Path FILE;
    static final DataSource DATA_SOURCE;
    static final JdbcStore STORE;

    static {
      try {
        Path dir = Files.createTempDirectory("once-sqlite");
        FILE = dir.resolve("once.db");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteQuietly(dir)));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      DATA_SOURCE = JdbcStore.sqliteDataSource(FILE);
      STORE = JdbcStore.sqlite(FILE);
      STORE.createSchema();
    }

    private Sqlite() {}
  }

  // --------------------------------------------------------------------------------------------

  /** The shared DataSource of {@code dialect}'s database. */
  static DataSource dataSource(JdbcDialect dialect) {
    switch (dialect) {
      case POSTGRESQL:
        return Postgres.DATA_SOURCE;
      case MARIADB:
        return MariaDb.DATA_SOURCE;
      default:
        return Sqlite.DATA_SOURCE;
    }
  }

  /** The shared store of {@code dialect} (its table exists). */
  static JdbcStore store(JdbcDialect dialect) {
    switch (dialect) {
      case POSTGRESQL:
        return Postgres.STORE;
      case MARIADB:
        return MariaDb.STORE;
      default:
        return Sqlite.STORE;
    }
  }

  static HikariConfig config(String name) {
    HikariConfig config = new HikariConfig();
    config.setPoolName(name);
    config.setMaximumPoolSize(POOL_SIZE);
    config.setMinimumIdle(2);
    config.setConnectionTimeout(10_000);
    return config;
  }

  static void dropAtExit(DataSource dataSource, String table) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      } catch (SQLException | RuntimeException e) {
        // best effort: a leftover test table is harmless
      }
    }));
  }

  static void deleteQuietly(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort
    }
  }
}
