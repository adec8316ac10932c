package dev.once.nearcache;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;

/**
 * The whole conformance suite against a near cache in front of a private Redis; a batch claim
 * that fails part-way meets a hash at one key's record ({@code WRONGTYPE}).
 */
class RedisNearCacheConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return NearCacheStore.wrap(Servers.Redis.newStore()).build();
  }

  @Override
  protected boolean poison(IdempotencyKey key) {
    Servers.Redis.SERVER.call("HSET", Servers.Redis.recordKey(key), "poison", "1");
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    Servers.Redis.SERVER.call("DEL", Servers.Redis.recordKey(key));
  }
}
