package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store built while its database is down (a PostgreSQL server not started yet, a SQLite file
 * whose directory does not exist yet): building needs no connection, the first calls report the
 * outage as {@link StoreUnavailableException} that changed nothing, and once the database is there
 * the same store, pool and {@code Once} work without being rebuilt.
 */
class OutageAtStartTest {

  private static final Fingerprint FP = Fingerprint.of("outage");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);

  private static ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, Instant.now(), LEASE, RETENTION);
  }

  private static void assertOutage(org.assertj.core.api.ThrowableAssert.ThrowingCallable call) {
    assertThatThrownBy(call).isInstanceOfSatisfying(StoreUnavailableException.class,
        e -> assertThat(e.mayHaveBeenApplied()).as("nothing was sent").isFalse());
  }

  @Test
  @Tag("postgres")
  void aStoreBuiltWhilePostgresIsDownWorksOnceItIsUp() throws IOException {
    int port;
    try (ServerSocket reserved = new ServerSocket(0)) {
      port = reserved.getLocalPort();
    }
    HikariConfig config = Databases.config("once-outage");
    config.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + port + "/postgres");
    config.setUsername("postgres");
    config.setMaximumPoolSize(2);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(1_000);
    config.setInitializationFailTimeout(-1); // the pool itself must start without its database
    try (HikariDataSource pool = new HikariDataSource(config)) {
      // No dialect: it would be detected with a connection, so it is left to the first call.
      JdbcStore store = JdbcStore.builder(pool).build();
      Once once = Once.builder(store).build();
      TransactionalOnce transactional = TransactionalOnce.builder(store).build();
      IdempotencyKey key = IdempotencyKey.of("outage", "pg-" + port);

      assertOutage(() -> store.claim(request(key)));
      assertOutage(() -> once.execute(key, FP, Codecs.utf8(), a -> "never runs"));
      assertOutage(() -> transactional.execute(key, FP, Codecs.utf8(), tx -> "never runs"));
      assertOutage(store::createSchema);

      try (EmbeddedPostgres server = EmbeddedPostgres.builder().setPort(port)
          .setServerConfig("fsync", "off").start()) {
        store.createSchema();
        assertThat(store.dialect()).isEqualTo(JdbcDialect.POSTGRESQL);
        assertThat(once.execute(key, FP, Codecs.utf8(), a -> "ran")).isEqualTo("ran");
        assertThat(once.execute(key, FP, Codecs.utf8(), a -> "again")).isEqualTo("ran");
        IdempotencyKey other = IdempotencyKey.of("outage", "tx-" + port);
        assertThat(transactional.execute(other, FP, Codecs.utf8(), tx -> "in a transaction"))
            .isEqualTo("in a transaction");
      }
    }
  }

  @Test
  @Tag("sqlite")
  void aStoreBuiltBeforeItsSqliteFileCanExistWorksOnceItCan(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("not-yet").resolve("once.db");
    JdbcStore store = JdbcStore.builder(JdbcStore.sqliteDataSource(file)).build();
    Once once = Once.builder(store).build();
    IdempotencyKey key = IdempotencyKey.of("outage", "sqlite");

    assertOutage(() -> store.claim(request(key)));
    assertOutage(() -> once.execute(key, FP, Codecs.utf8(), a -> "never runs"));
    assertOutage(store::createSchema);

    Files.createDirectories(file.getParent());
    store.createSchema();
    assertThat(store.dialect()).isEqualTo(JdbcDialect.SQLITE);
    assertThat(once.execute(key, FP, Codecs.utf8(), a -> "ran")).isEqualTo("ran");
    assertThat(store.claim(request(key))).isInstanceOf(Claim.Replay.class);
  }
}
