package dev.once.cli;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;

/** One embedded PostgreSQL (binaries from Maven Central) for the CLI tests, started on first use. */
final class EmbeddedPostgresServer {

  private EmbeddedPostgresServer() {}

  private static final class Holder {
    static final EmbeddedPostgres SERVER = start();

    private static EmbeddedPostgres start() {
      try {
        EmbeddedPostgres pg = EmbeddedPostgres.builder().start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          try {
            pg.close();
          } catch (IOException e) {
            // exiting anyway
          }
        }));
        return pg;
      } catch (IOException e) {
        throw new UncheckedIOException("embedded PostgreSQL did not start", e);
      }
    }
  }

  /** A JDBC URL of the server's {@code postgres} database as user {@code postgres}. */
  static String jdbcUrl() {
    return Holder.SERVER.getJdbcUrl("postgres", "postgres");
  }
}
