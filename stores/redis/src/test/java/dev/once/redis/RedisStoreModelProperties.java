package dev.once.redis;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;

/** The model-based property test against a standalone Redis. */
class RedisStoreModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Standalone.CLIENT).build();
  }
}
