package dev.once.spring;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.JdbcStore;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
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
    config.setJdbcUrl(Postgres.SERVER.getJdbcUrl("postgres", "postgres"));
    config.setMaximumPoolSize(20);
    config.setMinimumIdle(1);
    return new HikariDataSource(config);
  }

  /** The JDBC URL of the embedded PostgreSQL server. */
  static String postgresUrl() {
    return Postgres.SERVER.getJdbcUrl("postgres", "postgres");
  }

  private static final class Postgres {
    static final EmbeddedPostgres SERVER;

    static {
      try {
        SERVER = EmbeddedPostgres.builder()
            // Test data is disposable: trade durability for speed.
            .setServerConfig("fsync", "off")
            .setServerConfig("synchronous_commit", "off")
            .setServerConfig("full_page_writes", "off")
            .start();
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not start", e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          SERVER.close();
        } catch (IOException e) {
          // exiting anyway
        }
      }));
    }
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
