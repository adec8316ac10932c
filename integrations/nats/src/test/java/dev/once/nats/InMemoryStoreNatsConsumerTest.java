package dev.once.nats;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Effects;
import dev.once.testkit.MemoryEffects;

/** The NATS consumer contract on {@link InMemoryStore}. */
class InMemoryStoreNatsConsumerTest extends IdempotentNatsConsumerContract {

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
