package dev.once.reactor;

import dev.once.spi.IdempotencyStore;

/**
 * {@link OnceReactorContract} on Redis ({@code once-redis}, a private redis-server), through its
 * blocking calls ({@link Stores#blockingCallsOnly}: the contract steps the engine by hand).
 */
class RedisOnceReactorTest extends OnceReactorContract {

  @Override
  protected IdempotencyStore store() {
    return Stores.blockingCallsOnly(Stores.Redis.STORE);
  }
}
