package dev.once.nearcache;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.IdempotencyKey;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.RedisStore;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.testkit.TestPostgres;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.TimeoutOptions;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The real servers the tests put the near cache in front of, started once per test JVM on first
 * use: PostgreSQL ({@link TestPostgres}: embedded, or {@code ONCE_POSTGRES_URL}) in a table of
 * this run's own, and a private {@code redis-server} on a free loopback port.
 */
final class Servers {

  private Servers() {}

  /** PostgreSQL and one JDBC store on it, shared by the tests (each works in its own scope). */
  static final class Postgres {
    static final HikariDataSource DATA_SOURCE;
    static final JdbcStore STORE;
    private static final AtomicInteger NEXT_POISON = new AtomicInteger();
    private static final Map<IdempotencyKey, String> POISONS = new ConcurrentHashMap<>();

    static {
      HikariConfig config = new HikariConfig();
      config.setPoolName("once-near-cache-postgres");
      config.setJdbcUrl(TestPostgres.jdbcUrl());
      // The races use 16 threads; a claim holds one connection.
      config.setMaximumPoolSize(20);
      DATA_SOURCE = new HikariDataSource(config);
      String table = "once_nc_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
      STORE = JdbcStore.builder(DATA_SOURCE).dialect(JdbcDialect.POSTGRESQL).table(table).build();
      STORE.createSchema();
      if (TestPostgres.isExternal()) {
        // A shared server keeps tables: drop ours. The embedded one is discarded whole at exit.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          try {
            run(List.of("DROP TABLE IF EXISTS " + table));
          } finally {
            DATA_SOURCE.close();
          }
        }, "once-near-cache-postgres-drop"));
      }
    }

    private Postgres() {}

    /**
     * Makes every write of {@code key}'s row fail in the database itself: a trigger raising for
     * it (as the JDBC module's tests do), so that a batch claim fails part-way.
     */
    static void poison(IdempotencyKey key) {
      String name = "once_nc_poison_" + NEXT_POISON.incrementAndGet();
      POISONS.put(key, name);
      String match = "NEW.scope = " + literal(key.scope()) + " AND NEW.tenant = "
          + literal(key.tenant()) + " AND NEW.idem_key = " + literal(key.key());
      run(List.of("CREATE FUNCTION " + name + "() RETURNS trigger LANGUAGE plpgsql AS $$"
              + " BEGIN IF " + match + " THEN RAISE EXCEPTION 'poisoned key %', NEW.idem_key"
              + " USING ERRCODE = 'P0001'; END IF; RETURN NEW; END $$",
          "CREATE TRIGGER " + name + " BEFORE INSERT OR UPDATE ON " + STORE.table()
              + " FOR EACH ROW EXECUTE FUNCTION " + name + "()"));
    }

    /** Undoes {@link #poison}. */
    static void heal(IdempotencyKey key) {
      String name = POISONS.remove(key);
      if (name != null) {
        run(List.of("DROP TRIGGER IF EXISTS " + name + " ON " + STORE.table(),
            "DROP FUNCTION IF EXISTS " + name + "()"));
      }
    }

    /** Deletes {@code key}'s row behind the store's back, as an operator's SQL would. */
    static void deleteByHand(IdempotencyKey key) {
      run(List.of("DELETE FROM " + STORE.table() + " WHERE scope = " + literal(key.scope())
          + " AND tenant = " + literal(key.tenant()) + " AND idem_key = " + literal(key.key())));
    }

    private static String literal(String s) {
      return "'" + s.replace("'", "''") + "'";
    }

    private static void run(List<String> statements) {
      try (Connection c = DATA_SOURCE.getConnection(); Statement s = c.createStatement()) {
        for (String sql : statements) {
          s.execute(sql);
        }
      } catch (SQLException e) {
        throw new IllegalStateException("statement failed: " + e, e);
      }
    }
  }

  /** A private redis-server and a client on it, shared by the tests. */
  static final class Redis {
    static final RedisServerProcess SERVER = RedisServerProcess.start();
    static final RedisClient CLIENT = RedisClient.create(SERVER.uri());

    static {
      CLIENT.setOptions(ClientOptions.builder()
          .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(10))).build());
      Runtime.getRuntime().addShutdownHook(new Thread(() -> CLIENT.shutdown(Duration.ZERO,
          Duration.ofSeconds(1))));
    }

    private Redis() {}

    /**
     * A store on the server with the default key prefix (the server is this JVM's own); a
     * generous command timeout, for a loaded machine (the first connect included).
     */
    static RedisStore newStore() {
      return RedisStore.builder(CLIENT).commandTimeout(Duration.ofSeconds(10)).build();
    }

    /**
     * The Redis key of {@code key}'s record under the default prefix: {@code prefix scope tenant
     * key}, as the Redis store lays records out (its internal {@code KeyLayout}).
     */
    static String recordKey(IdempotencyKey key) {
      return RedisStore.DEFAULT_KEY_PREFIX + ' ' + key.scope() + ' ' + key.tenant() + ' '
          + key.key();
    }
  }
}
