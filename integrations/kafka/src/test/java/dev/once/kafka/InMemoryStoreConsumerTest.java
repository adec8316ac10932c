package dev.once.kafka;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;

/** The consumer contract on {@link InMemoryStore}. */
class InMemoryStoreConsumerTest extends IdempotentConsumerContract {

  private static final InMemoryStore STORE = new InMemoryStore();

  @Override
  protected IdempotencyStore store() {
    return STORE;
  }

  @Override
  protected Effects newEffects() {
    return new MemoryEffects();
  }
}
