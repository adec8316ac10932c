package dev.once.nearcache;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;

/** The model-based property test against a near cache in front of the in-memory store. */
class InMemoryNearCacheModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return NearCacheStore.wrap(new InMemoryStore()).build();
  }
}
