package dev.once.spring;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.JdbcStore;
import dev.once.testkit.TestPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.UUID;
import java.util.stream.Stream;
import javax.sql.DataSource;

/**
 * The real databases the tests use: one embedded PostgreSQL per test JVM (started on first use,
 * stopped at exit), and SQLite files in a temporary directory.
 */
final class TestDatabases {

  private TestDatabases() {}

  /** A new SQLite database file, configured as JdbcStore wants it. */
  static DataSource sqlite() {
    return JdbcStore.sqliteDataSource(Sqlite.DIR.resolve(UUID.randomUUID() + ".db"));
  }

  /** A new pool on the embedded PostgreSQL server (each test context its own, closed by it). */
  static HikariDataSource postgres() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    config.setMaximumPoolSize(20);
    config.setMinimumIdle(1);
    return new HikariDataSource(config);
  }

  /** The JDBC URL of the embedded PostgreSQL server. */
  static String postgresUrl() {
    return TestPostgres.jdbcUrl();
  }

  private static final class Sqlite {
    static final Path DIR;

    static {
      try {
        DIR = Files.createTempDirectory("once-spring-sqlite");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try (Stream<Path> paths = Files.walk(DIR)) {
          paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
          // best effort
        }
      }));
    }
  }
}
