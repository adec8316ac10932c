package dev.once.rabbitmq;

import dev.once.redis.RedisStore;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Effects;
import dev.once.testkit.MemoryEffects;

/** The consumer contract on {@link RedisStore}, against a private redis-server started here. */
class RedisStoreConsumerTest extends RabbitConsumerContract {

  /** One server and store for the test JVM; the launcher kills the server at exit. */
  private static final class Holder {
    static final RedisServerProcess SERVER = RedisServerProcess.start();
    static final RedisStore STORE = RedisStore.builder(SERVER.uri()).build();
  }

  @Override
  protected IdempotencyStore store() {
    return Holder.STORE;
  }

  @Override
  protected Effects newEffects() {
    return new MemoryEffects();
  }

  /**
   * The server runs out of memory: with {@code maxmemory} below what it uses and no eviction
   * (the default policy), it refuses every write with an OOM error until the limit is lifted.
   */
  @Override
  protected StoreOutage outage() {
    return new StoreOutage() {
      @Override
      public IdempotencyStore store() {
        return Holder.STORE;
      }

      @Override
      public void begin() {
        Holder.SERVER.call("CONFIG", "SET", "maxmemory-policy", "noeviction");
        Holder.SERVER.call("CONFIG", "SET", "maxmemory", "1");
      }

      @Override
      public void end() {
        Holder.SERVER.call("CONFIG", "SET", "maxmemory", "0");
      }
    };
  }
}
