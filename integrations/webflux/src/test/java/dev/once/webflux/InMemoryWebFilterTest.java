package dev.once.webflux;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import java.nio.file.Path;

/** The HTTP contract over {@link InMemoryStore}. */
class InMemoryWebFilterTest extends WebFluxContract {

  @Override
  protected IdempotencyStore newStore(Path dir) {
    return new InMemoryStore();
  }
}
