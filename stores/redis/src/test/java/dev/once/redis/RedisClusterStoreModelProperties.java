package dev.once.redis;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;

/** The model-based property test against a 3-master Redis Cluster. */
class RedisClusterStoreModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Cluster.CLIENT).build();
  }
}
