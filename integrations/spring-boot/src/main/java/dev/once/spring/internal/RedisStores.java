package dev.once.spring.internal;

import dev.once.redis.RedisStore;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.OnceProperties;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * The Redis half of {@link StoreFactory}, in a class of its own so that Lettuce and once-redis are
 * only loaded when present. The client is a Lettuce {@link RedisClient} or
 * {@link RedisClusterClient} bean; the store opens its own connection on it and the client stays
 * the context's. (Spring Data Redis's {@code LettuceConnectionFactory} is not used: Spring Data
 * Redis 4 needs Lettuce 7, once-redis is built on Lettuce 6.8.)
 */
final class RedisStores {

  private RedisStores() {}

  /** A RedisStore over the context's Lettuce client, or null if there is none. */
  static IdempotencyStore create(ListableBeanFactory beans, OnceProperties properties) {
    AbstractRedisClient client = beans.getBeanProvider(RedisClient.class).getIfUnique();
    if (client == null) {
      client = beans.getBeanProvider(RedisClusterClient.class).getIfUnique();
    }
    RedisStore.Builder builder;
    if (client instanceof RedisClient standalone) {
      builder = RedisStore.builder(standalone);
    } else if (client instanceof RedisClusterClient cluster) {
      builder = RedisStore.builder(cluster);
    } else {
      return null;
    }
    return builder.keyPrefix(properties.getRedis().getKeyPrefix())
        .commandTimeout(properties.getRedis().getCommandTimeout())
        .build();
  }
}
