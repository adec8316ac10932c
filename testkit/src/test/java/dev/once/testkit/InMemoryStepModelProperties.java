package dev.once.testkit;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;

class InMemoryStepModelProperties extends StepModelProperties {
  @Override
  protected IdempotencyStore newStore() {
    return new InMemoryStore();
  }
}
