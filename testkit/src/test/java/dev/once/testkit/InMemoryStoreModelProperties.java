package dev.once.testkit;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;

class InMemoryStoreModelProperties extends StoreModelProperties {
  @Override
  protected IdempotencyStore newStore() {
    return new InMemoryStore();
  }
}
