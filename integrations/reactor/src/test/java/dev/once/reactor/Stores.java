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

  /**
   * {@code store} without its native asynchronous calls: the engine claims and completes through
   * the blocking ones on its executor, as for a store that has none. The contract steps the
   * engine's tasks by hand ({@link HandExecutor}), which an answer arriving later on the store
   * client's own thread would slip past; Redis's native {@code claimAsync}/{@code completeAsync}
   * under {@code Once.callAsync} are tested on real threads in once-redis
   * ({@code RedisCallAsyncTest}, {@code RedisClaimAsyncTest}) and by the conformance suite.
   */
  static IdempotencyStore blockingCallsOnly(IdempotencyStore store) {
    return new BlockingCallsOnly(store);
  }

  /** Every method of the SPI but the two asynchronous ones, forwarded. */
  private static final class BlockingCallsOnly implements IdempotencyStore {
    private final IdempotencyStore store;

    BlockingCallsOnly(IdempotencyStore store) {
      this.store = store;
    }

    @Override
    public dev.once.spi.Claim claim(dev.once.spi.ClaimRequest request) {
      return store.claim(request);
    }

    @Override
    public java.util.List<dev.once.spi.Claim> claimAll(
        java.util.List<dev.once.spi.ClaimRequest> requests) {
      return store.claimAll(requests);
    }

    @Override
    public void complete(dev.once.IdempotencyKey key, long token, dev.once.spi.Outcome outcome,
        java.time.Instant now, java.time.Duration retention) {
      store.complete(key, token, outcome, now, retention);
    }

    @Override
    public Set<dev.once.IdempotencyKey> completeAll(
        java.util.List<dev.once.spi.Completion> completions, java.time.Instant now,
        java.time.Duration retention) {
      return store.completeAll(completions, now, retention);
    }

    @Override
    public void fail(dev.once.IdempotencyKey key, long token, String error,
        java.time.Instant now, java.time.Duration retention) {
      store.fail(key, token, error, now, retention);
    }

    @Override
    public void release(dev.once.IdempotencyKey key, long token, String reason,
        java.time.Instant now, java.time.Duration retention) {
      store.release(key, token, reason, now, retention);
    }

    @Override
    public java.time.Instant extend(dev.once.IdempotencyKey key, long token,
        java.time.Instant now, java.time.Duration lease) {
      return store.extend(key, token, now, lease);
    }

    @Override
    public Set<dev.once.IdempotencyKey> extendAll(java.util.List<dev.once.spi.HeldClaim> claims,
        java.time.Instant now, java.time.Duration lease) {
      return store.extendAll(claims, now, lease);
    }

    @Override
    public void checkpoint(dev.once.IdempotencyKey key, long token,
        dev.once.Checkpoint checkpoint, java.time.Instant now) {
      store.checkpoint(key, token, checkpoint, now);
    }

    @Override
    public java.util.Optional<dev.once.spi.IdempotencyRecord> find(dev.once.IdempotencyKey key) {
      return store.find(key);
    }

    @Override
    public int purgeExpired(java.time.Instant now, int limit) {
      return store.purgeExpired(now, limit);
    }

    @Override
    public int reapExpiredLeases(java.time.Instant now, int limit) {
      return store.reapExpiredLeases(now, limit);
    }

    @Override
    public int maxPayloadBytes() {
      return store.maxPayloadBytes();
    }
  }

  static Set<String> threadNames() {
    return ConcurrentHashMap.newKeySet();
  }
}
