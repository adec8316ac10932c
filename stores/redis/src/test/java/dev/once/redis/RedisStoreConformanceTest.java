package dev.once.redis;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;

/** The whole conformance suite against a standalone Redis (see {@link RedisServers.Standalone}). */
class RedisStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Standalone.CLIENT).build();
  }
}
