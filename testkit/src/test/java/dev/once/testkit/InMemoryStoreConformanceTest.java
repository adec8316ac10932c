package dev.once.testkit;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;

class InMemoryStoreConformanceTest extends StoreConformanceSuite {
  @Override
  protected IdempotencyStore newStore() {
    return new InMemoryStore();
  }

  /** Instances do not share records: the second client is the same store. */
  @Override
  protected IdempotencyStore anotherClient() {
    return store;
  }
}
