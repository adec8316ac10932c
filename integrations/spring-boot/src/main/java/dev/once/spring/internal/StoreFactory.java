package dev.once.spring.internal;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.OnceProperties;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.annotation.AnnotatedBeanDefinition;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Makes the store the context calls for ({@code once.store}): a DataSource → {@link JdbcStore}
 * ({@code once.jdbc.dialect}, or detected on its first call); else a Lettuce client → RedisStore
 * (with {@code once-redis}); else the startup fails, naming the fix: an {@link InMemoryStore}
 * holds nothing across restarts nor instances, so it is used only when {@code once.store=memory}
 * asks for it.
 */
public final class StoreFactory {

  private static final Log LOG = LogFactory.getLog(StoreFactory.class);

  private static final boolean REDIS_PRESENT =
      ClassUtils.isPresent("dev.once.redis.RedisStore", StoreFactory.class.getClassLoader())
          && ClassUtils.isPresent("io.lettuce.core.RedisClient", StoreFactory.class.getClassLoader());

  /** Where the starter's own beans are declared (by name: no cycle between the packages). */
  private static final String STARTERS_CONFIGURATION =
      "dev.once.spring.autoconfigure.OnceAutoConfiguration";

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
        IdempotencyStore declared = storeOfDeclaredOnce(beans);
        if (declared != null) {
          return declared; // the application built its own Once: its store is the store
        }
        // An in-memory store here would keep each instance's records to itself: a service with
        // several instances would silently have no idempotency between them.
        throw new OnceStartupException("Once found no idempotency store: no DataSource bean and"
            + " no Lettuce client (with once-redis), and once.store is not set",
            "Add a DataSource (spring.datasource.url) for the JDBC store, or a Lettuce"
                + " RedisClient bean with dev.once:once-redis, or declare an IdempotencyStore"
                + " bean; for tests or a single instance whose records may be lost on restart,"
                + " set once.store=memory.", null);
      }
    }
  }

  /**
   * The store of a {@link Once} bean the application declared itself (not the starter's), or
   * null. Read from bean definitions first, so the starter's own Once is never created here.
   */
  private static IdempotencyStore storeOfDeclaredOnce(ListableBeanFactory beans) {
    if (!(beans instanceof ConfigurableListableBeanFactory factory)) {
      return null;
    }
    List<String> declared = new ArrayList<>();
    for (String name : beans.getBeanNamesForType(Once.class, false, false)) {
      if (factory.isCurrentlyInCreation(name)) {
        continue; // it is what asked for the store: using it would go round in a circle
      }
      BeanDefinition definition = factory.containsBeanDefinition(name)
          ? factory.getBeanDefinition(name) : null;
      boolean starters = definition instanceof AnnotatedBeanDefinition annotated
          && annotated.getFactoryMethodMetadata() != null
          && annotated.getFactoryMethodMetadata().getDeclaringClassName()
              .equals(STARTERS_CONFIGURATION);
      if (!starters) {
        declared.add(name);
      }
    }
    List<String> primary = declared.stream().filter(n -> factory.containsBeanDefinition(n)
        && factory.getBeanDefinition(n).isPrimary()).toList();
    String chosen = declared.size() == 1 ? declared.get(0)
        : primary.size() == 1 ? primary.get(0) : null;
    if (chosen == null) {
      return null; // none, or several and no one primary: the startup fails, naming the fix
    }
    try {
      return beans.getBean(chosen, Once.class).store();
    } catch (BeanCreationException e) {
      // The application's Once needs this very store (directly or through a listener): there is
      // no store to give it, which the startup error says.
      return null;
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
