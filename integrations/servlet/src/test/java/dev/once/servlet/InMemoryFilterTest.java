package dev.once.servlet;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import java.nio.file.Path;

/** The HTTP contract over {@link InMemoryStore}. */
class InMemoryFilterTest extends ServletContract {

  @Override
  protected IdempotencyStore newStore(Path dir) {
    return new InMemoryStore();
  }
}
