package dev.once.rabbitmq;

import dev.once.InMemoryStore;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Effects;
import dev.once.testkit.MemoryEffects;
import dev.once.testkit.UnreachableStore;

/** The consumer contract on {@link InMemoryStore}. */
class InMemoryStoreConsumerTest extends RabbitConsumerContract {

  private static final InMemoryStore STORE = new InMemoryStore();

  @Override
  protected IdempotencyStore store() {
    return STORE;
  }

  @Override
  protected Effects newEffects() {
    return new MemoryEffects();
  }

  /**
   * A memory has no outage of its own: the store is seen through a view that fails every call
   * while the outage lasts, as a remote store does when its server is unreachable.
   */
  @Override
  protected StoreOutage outage() {
    UnreachableStore view = new UnreachableStore(STORE);
    return new StoreOutage() {
      @Override
      public IdempotencyStore store() {
        return view;
      }

      @Override
      public void begin() {
        view.down(true);
      }

      @Override
      public void end() {
        view.down(false);
      }
    };
  }
}
