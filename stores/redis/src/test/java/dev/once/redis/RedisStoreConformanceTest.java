package dev.once.redis;

import dev.once.IdempotencyKey;
import dev.once.redis.internal.KeyLayout;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import java.nio.charset.StandardCharsets;

/** The whole conformance suite against a standalone Redis (see {@link RedisServers.Standalone}). */
class RedisStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Standalone.CLIENT).build();
  }

  /** A hash at the record's key: the claim's {@code SET … NX GET} fails with WRONGTYPE. */
  @Override
  protected boolean poison(IdempotencyKey key) {
    RedisServers.Standalone.SERVER.call("HSET", recordKey(key), "poison", "1");
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    RedisServers.Standalone.SERVER.call("DEL", recordKey(key));
  }

  /** The key of {@code key}'s record in a store with the default prefix, as the suite's store. */
  static String recordKey(IdempotencyKey key) {
    return new String(new KeyLayout(RedisStore.DEFAULT_KEY_PREFIX).record(key),
        StandardCharsets.ISO_8859_1);
  }
}
