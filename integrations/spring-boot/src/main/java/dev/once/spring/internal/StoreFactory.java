package dev.once.spring.internal;

import dev.once.InMemoryStore;
import dev.once.StoreUnavailableException;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.OnceProperties;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Makes the store the context calls for ({@code once.store}): a DataSource → {@link JdbcStore}
 * ({@code once.jdbc.dialect}, or detected on its first call); else a Lettuce client → RedisStore
 * (with {@code once-redis}); else an {@link InMemoryStore}, with a warning that it holds nothing
 * across restarts nor instances.
 */
public final class StoreFactory {

  private static final Log LOG = LogFactory.getLog(StoreFactory.class);

  private static final boolean REDIS_PRESENT =
      ClassUtils.isPresent("dev.once.redis.RedisStore", StoreFactory.class.getClassLoader())
          && ClassUtils.isPresent("io.lettuce.core.RedisClient", StoreFactory.class.getClassLoader());

  private StoreFactory() {}

  /** The store for {@code properties}, from the beans of {@code beans}. */
  public static IdempotencyStore create(OnceProperties properties, ListableBeanFactory beans) {
    switch (properties.getStore()) {
      case JDBC: {
        DataSource dataSource = dataSource(beans);
        if (dataSource == null) {
          throw new OnceStartupException("once.store=jdbc needs one DataSource bean (or a"
              + " @Primary one); found " + beans.getBeanNamesForType(DataSource.class).length,
              "Configure a DataSource (spring.datasource.url), mark one @Primary, or set"
                  + " once.store to auto, redis or memory.", null);
        }
        return jdbc(dataSource, properties);
      }
      case REDIS: {
        IdempotencyStore redis = REDIS_PRESENT ? RedisStores.create(beans, properties) : null;
        if (redis == null) {
          throw new OnceStartupException("once.store=redis needs dev.once:once-redis on the"
              + " classpath and a Lettuce RedisClient or RedisClusterClient bean",
              "Add dev.once:once-redis and declare a RedisClient (or RedisClusterClient) bean, or"
                  + " set once.store to auto, jdbc or memory.", null);
        }
        return redis;
      }
      case MEMORY:
        return new InMemoryStore();
      default: {
        DataSource dataSource = dataSource(beans);
        if (dataSource != null) {
          return jdbc(dataSource, properties);
        }
        IdempotencyStore redis = REDIS_PRESENT ? RedisStores.create(beans, properties) : null;
        if (redis != null) {
          return redis;
        }
        LOG.warn("Once uses an in-memory idempotency store: records are lost on restart and not"
            + " shared between instances, so duplicates are only caught within this JVM. Add a"
            + " DataSource (or a Lettuce client with once-redis), declare an IdempotencyStore"
            + " bean, or set once.store=memory to silence this warning.");
        return new InMemoryStore();
      }
    }
  }

  /** The context's one DataSource (or its primary one), or null. */
  public static DataSource dataSource(ListableBeanFactory beans) {
    return beans.getBeanProvider(DataSource.class).getIfUnique();
  }

  /**
   * The JDBC store: never connects, unless {@code once.jdbc.create-schema} asks for the DDL now. A
   * database that cannot be reached for it fails the startup with an {@link OnceStartupException}
   * that says so, and how to start without it.
   */
  private static JdbcStore jdbc(DataSource dataSource, OnceProperties properties) {
    OnceProperties.Jdbc jdbc = properties.getJdbc();
    JdbcStore.Builder builder = JdbcStore.builder(dataSource).table(jdbc.getTable());
    if (jdbc.getDialect() != null) {
      builder.dialect(jdbc.getDialect().jdbc());
    }
    JdbcStore store = builder.build();
    if (jdbc.isCreateSchema()) {
      try {
        store.createSchema();
      } catch (StoreUnavailableException e) {
        throw schemaFailed(store, jdbc, e);
      }
    }
    return store;
  }

  private static OnceStartupException schemaFailed(JdbcStore store, OnceProperties.Jdbc jdbc,
      StoreUnavailableException e) {
    String dialect = jdbc.getDialect() == null ? "X" : jdbc.getDialect().jdbc().name();
    return new OnceStartupException("Once could not create its table " + store.table()
        + " at startup (once.jdbc.create-schema=true): " + e.getMessage(),
        "Start the database, or check spring.datasource.* and that its user may create tables."
            + " To let the application start while the database is down, set"
            + " once.jdbc.create-schema=false and apply the schema with your migrations"
            + " (JdbcDialect." + dialect + ".schema(\"" + store.table() + "\"), or `once schema`),"
            + " and name the database with once.jdbc.dialect (postgresql, mariadb, mysql, sqlite)"
            + " so that it need not be asked; until the database is back, @Idempotent calls throw"
            + " StoreUnavailableException and the Idempotency-Key filter answers 503.", e);
  }
}
