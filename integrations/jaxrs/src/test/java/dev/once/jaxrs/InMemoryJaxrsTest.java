package dev.once.jaxrs;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import java.nio.file.Path;

/** The HTTP contract through Jersey over {@link InMemoryStore}. */
class InMemoryJaxrsTest extends JerseyContract {

  @Override
  protected IdempotencyStore newStore(Path dir) {
    return new InMemoryStore();
  }
}
