package dev.once.redis;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;

/** The whole conformance suite against a 3-master Redis Cluster (see {@link RedisServers.Cluster}). */
class RedisClusterStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Cluster.CLIENT).build();
  }
}
