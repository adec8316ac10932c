package dev.once.redis.internal;

import dev.once.IdempotencyKey;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * Where records and indexes live. Every key carries a hash tag naming one of {@value #BUCKETS}
 * buckets, so a record and the two indexes of its bucket are in one Redis Cluster slot and one Lua
 * script can change them together:
 *
 * <pre>
 * {prefix}{b}:r:{scope} {tenant} {key}   hash: the record
 * {prefix}{b}:expiry                     sorted set: record key by expires_at (µs)
 * {prefix}{b}:leases                     sorted set: IN_PROGRESS record key by lease_until (µs)
 * </pre>
 *
 * {@code b} is CRC32 of "{scope} {tenant} {key}" modulo {@value #BUCKETS}. Scope and tenant never
 * contain a space, so the spaces separate the parts unambiguously (the key may contain spaces).
 * The bucket count is part of the data format: changing it would move every record.
 */
public final class KeyLayout {

  /** Buckets: enough to spread over the masters of large clusters, few enough to visit all. */
  public static final int BUCKETS = 1024;

  private final String prefix;
  private final byte[][] expiryIndexes = new byte[BUCKETS][];
  private final byte[][] leaseIndexes = new byte[BUCKETS][];

  public KeyLayout(String prefix) {
    this.prefix = prefix;
    for (int b = 0; b < BUCKETS; b++) {
      expiryIndexes[b] = ascii(tag(b) + ":expiry");
      leaseIndexes[b] = ascii(tag(b) + ":leases");
    }
  }

  /** The three keys a transition script gets: record, expiry index, lease index. */
  public byte[][] keys(IdempotencyKey key) {
    String id = key.scope() + ' ' + key.tenant() + ' ' + key.key();
    int bucket = bucket(id);
    return new byte[][] {ascii(tag(bucket) + ":r:" + id), expiryIndexes[bucket], leaseIndexes[bucket]};
  }

  public byte[] expiryIndex(int bucket) {
    return expiryIndexes[bucket];
  }

  public byte[] leaseIndex(int bucket) {
    return leaseIndexes[bucket];
  }

  private String tag(int bucket) {
    return prefix + '{' + bucket + '}';
  }

  private static int bucket(String id) {
    CRC32 crc = new CRC32();
    crc.update(id.getBytes(StandardCharsets.US_ASCII));
    return (int) (crc.getValue() % BUCKETS);
  }

  private static byte[] ascii(String s) {
    // Keys are validated printable ASCII (IdempotencyKey), the prefix too (RedisStore.Builder).
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
