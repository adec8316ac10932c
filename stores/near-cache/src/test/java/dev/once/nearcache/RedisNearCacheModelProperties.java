package dev.once.nearcache;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;

/** The model-based property test against a near cache in front of the Redis store. */
class RedisNearCacheModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return NearCacheStore.wrap(Servers.Redis.newStore()).build();
  }
}
