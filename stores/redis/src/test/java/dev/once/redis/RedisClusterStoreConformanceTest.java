package dev.once.redis;

import dev.once.IdempotencyKey;
import dev.once.redis.internal.KeyLayout;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;

/** The whole conformance suite against a 3-master Redis Cluster (see {@link RedisServers.Cluster}). */
class RedisClusterStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return RedisStore.builder(RedisServers.Cluster.CLIENT).build();
  }

  /**
   * A hash at the record's key, on the master of its slot (the batch's other keys are spread over
   * the three masters): that master answers the claim's {@code SET … NX GET} with WRONGTYPE.
   */
  @Override
  protected boolean poison(IdempotencyKey key) {
    try (StatefulRedisClusterConnection<byte[], byte[]> c =
        RedisServers.Cluster.CLIENT.connect(ByteArrayCodec.INSTANCE)) {
      c.sync().hset(recordKey(key), ascii("poison"), ascii("1"));
    }
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    try (StatefulRedisClusterConnection<byte[], byte[]> c =
        RedisServers.Cluster.CLIENT.connect(ByteArrayCodec.INSTANCE)) {
      c.sync().del(recordKey(key));
    }
  }

  private static byte[] recordKey(IdempotencyKey key) {
    return new KeyLayout(RedisStore.DEFAULT_KEY_PREFIX).record(key);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
