package dev.once.nearcache;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;

/**
 * The whole conformance suite against a near cache in front of the in-memory store. The second
 * client is a second near cache (another instance) over the same records.
 */
class InMemoryNearCacheConformanceTest extends StoreConformanceSuite {

  private InMemoryStore records;

  @Override
  protected IdempotencyStore newStore() {
    records = new InMemoryStore();
    return NearCacheStore.wrap(records).build();
  }

  @Override
  protected IdempotencyStore anotherClient() {
    return NearCacheStore.wrap(records).build();
  }
}
