package dev.once.spring.internal;

import dev.once.InMemoryStore;
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
 * (dialect detected); else a Lettuce client → RedisStore (with {@code once-redis}); else an
 * {@link InMemoryStore}, with a warning that it holds nothing across restarts nor instances.
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
          throw new IllegalStateException("once.store=jdbc needs one DataSource bean (or a"
              + " @Primary one); found " + beans.getBeanNamesForType(DataSource.class).length);
        }
        return jdbc(dataSource, properties);
      }
      case REDIS: {
        IdempotencyStore redis = REDIS_PRESENT ? RedisStores.create(beans, properties) : null;
        if (redis == null) {
          throw new IllegalStateException("once.store=redis needs dev.once:once-redis on the"
              + " classpath and a Lettuce RedisClient or RedisClusterClient bean");
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

  private static JdbcStore jdbc(DataSource dataSource, OnceProperties properties) {
    JdbcStore store = JdbcStore.builder(dataSource).table(properties.getJdbc().getTable()).build();
    if (properties.getJdbc().isCreateSchema()) {
      store.createSchema();
    }
    return store;
  }
}
