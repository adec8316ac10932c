package dev.once.reactor;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;

/** {@link OnceReactorContract} on {@link InMemoryStore}. */
class InMemoryOnceReactorTest extends OnceReactorContract {

  private static final InMemoryStore STORE = new InMemoryStore();

  @Override
  protected IdempotencyStore store() {
    return STORE;
  }
}
