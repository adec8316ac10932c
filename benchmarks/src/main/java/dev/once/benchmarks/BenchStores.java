package dev.once.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.InMemoryStore;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.RedisStore;
import dev.once.spi.IdempotencyStore;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.time.Duration;
import java.util.UUID;

/** The stores the consumer benchmarks run against, by name: memory, postgres or redis. */
final class BenchStores {

  private BenchStores() {}

  /** A store under test and what to release after it. */
  interface StoreUnderTest extends AutoCloseable {
    String name();

    IdempotencyStore store();

    @Override
    void close() throws Exception;
  }

  /**
   * Opens the store {@code name}: the in-memory store; PostgreSQL (embedded, or
   * {@code once.bench.postgres}) in a table of its own; Redis (a private server, or
   * {@code once.bench.redis}) under a key prefix of its own. {@code label} names the table and
   * prefix.
   */
  static StoreUnderTest open(String name, String label) throws Exception {
    switch (name) {
      case "memory": {
        InMemoryStore store = new InMemoryStore();
        return new StoreUnderTest() {
          public String name() {
            return "memory";
          }

          public IdempotencyStore store() {
            return store;
          }

          public void close() {}
        };
      }
      case "postgres": {
        String url = System.getProperty("once.bench.postgres");
        EmbeddedPostgres embedded = url == null ? EmbeddedPostgres.builder().start() : null;
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url != null ? url : embedded.getJdbcUrl("postgres", "postgres"));
        config.setMaximumPoolSize(4);
        HikariDataSource pool = new HikariDataSource(config);
        JdbcStore store = JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL)
            .table("once_" + label + "_bench_" + UUID.randomUUID().toString().substring(0, 8)).build();
        store.createSchema();
        return new StoreUnderTest() {
          public String name() {
            return "postgres";
          }

          public IdempotencyStore store() {
            return store;
          }

          public void close() throws Exception {
            pool.close();
            if (embedded != null) {
              embedded.close();
            }
          }
        };
      }
      case "redis": {
        String uri = System.getProperty("once.bench.redis");
        PrivateRedisServer server = uri == null || uri.isBlank() ? PrivateRedisServer.start()
            : null;
        RedisStore store = RedisStore.builder(server != null ? server.uri() : uri)
            .keyPrefix("once-" + label + "-bench-" + UUID.randomUUID().toString().substring(0, 8) + ":")
            .commandTimeout(Duration.ofSeconds(10)).build();
        return new StoreUnderTest() {
          public String name() {
            return "redis";
          }

          public IdempotencyStore store() {
            return store;
          }

          public void close() throws Exception {
            store.close();
            if (server != null) {
              server.close();
            }
          }
        };
      }
      default:
        throw new IllegalArgumentException("unknown store " + name + " (memory, postgres, redis)");
    }
  }
}
