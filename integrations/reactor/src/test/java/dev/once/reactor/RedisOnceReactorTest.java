package dev.once.reactor;

import dev.once.spi.IdempotencyStore;

/** {@link OnceReactorContract} on Redis ({@code once-redis}, a private redis-server). */
class RedisOnceReactorTest extends OnceReactorContract {

  @Override
  protected IdempotencyStore store() {
    return Stores.Redis.STORE;
  }
}
