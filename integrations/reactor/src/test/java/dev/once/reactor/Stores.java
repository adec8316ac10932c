package dev.once.reactor;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.redis.RedisStore;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.TestPostgres;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/** The real stores the tests share, each started once per JVM on first use. */
final class Stores {

  private Stores() {}

  /** PostgreSQL: embedded, or the server at {@code ONCE_POSTGRES_URL} (a table of its own). */
  static final class Postgres {
    static final JdbcStore STORE;

    static {
      HikariConfig config = new HikariConfig();
      config.setPoolName("once-reactor-postgres");
      config.setMaximumPoolSize(10);
      config.setConnectionTimeout(10_000);
      config.setJdbcUrl(TestPostgres.jdbcUrl());
      String table = TestPostgres.isExternal()
          ? "once_reactor_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8)
          : JdbcStore.DEFAULT_TABLE;
      HikariDataSource dataSource = new HikariDataSource(config);
      STORE = JdbcStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL).table(table).build();
      STORE.createSchema();
      if (!table.equals(JdbcStore.DEFAULT_TABLE)) {
        TestPostgres.dropAtExit(dataSource, table);
      }
    }

    private Postgres() {}
  }

  /** A private redis-server on a free port; the launcher kills it at exit. */
  static final class Redis {
    static final RedisServerProcess SERVER = RedisServerProcess.start();
    static final RedisStore STORE = RedisStore.builder(SERVER.uri()).build();

    private Redis() {}
  }

  /**
   * {@code store}, telling {@code threads} the name of every thread that calls it (the real store
   * underneath answers). {@code claimAsync}, which must not block and may be called from any
   * thread, is not a call that blocks: it claims as the SPI's default does, through this store's
   * own {@code claim} on the executor it is given, where that call is recorded.
   */
  static IdempotencyStore recordingThreads(IdempotencyStore store, Set<String> threads) {
    return (IdempotencyStore) java.lang.reflect.Proxy.newProxyInstance(
        IdempotencyStore.class.getClassLoader(), new Class<?>[] {IdempotencyStore.class},
        (proxy, method, args) -> {
          if (method.getName().equals("claimAsync")) {
            IdempotencyStore self = (IdempotencyStore) proxy;
            dev.once.spi.ClaimRequest request = (dev.once.spi.ClaimRequest) args[0];
            return java.util.concurrent.CompletableFuture.supplyAsync(() -> self.claim(request),
                (java.util.concurrent.Executor) args[1]);
          }
          if (method.getDeclaringClass() != Object.class) {
            threads.add(Thread.currentThread().getName());
          }
          try {
            return method.invoke(store, args);
          } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  static Set<String> threadNames() {
    return ConcurrentHashMap.newKeySet();
  }
}
