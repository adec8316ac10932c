package dev.once.sqs;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Effects;
import dev.once.testkit.MemoryEffects;

/** The SQS consumer contract on {@link InMemoryStore}. */
class InMemoryStoreSqsConsumerTest extends IdempotentSqsConsumerContract {

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
