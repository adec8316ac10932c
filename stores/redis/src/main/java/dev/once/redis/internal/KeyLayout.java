package dev.once.redis.internal;

import dev.once.IdempotencyKey;
import java.nio.charset.StandardCharsets;

/**
 * Where records live: one string key a record ({@link RecordFormat}), nothing else.
 *
 * <pre>
 * {prefix} {scope} {tenant} {key}
 * </pre>
 *
 * Prefix, scope and tenant never contain a space, so the spaces separate the parts unambiguously
 * (the key may contain spaces), and the records of two stores never mix, even when one prefix
 * starts with the other ({@code once:} and {@code once:eu:}). Each record is alone in its
 * transitions, so any slot will do: a brace pair in an idempotency key acts as a Redis Cluster
 * hash tag, which is harmless. Purge and reap find the records with {@code SCAN} over
 * {@link #pattern()}.
 */
public final class KeyLayout {

  private final String prefix;
  /** The prefix and the space after it, in ASCII. */
  private final byte[] head;

  public KeyLayout(String prefix) {
    this.prefix = prefix;
    this.head = ascii(prefix + ' ');
  }

  /** The record's key, written into one array (it is made for every call of the store). */
  public byte[] record(IdempotencyKey key) {
    String scope = key.scope();
    String tenant = key.tenant();
    String name = key.key();
    byte[] out = new byte[head.length + scope.length() + tenant.length() + name.length() + 2];
    System.arraycopy(head, 0, out, 0, head.length);
    int at = put(out, head.length, scope);
    out[at++] = ' ';
    at = put(out, at, tenant);
    out[at++] = ' ';
    put(out, at, name);
    return out;
  }

  /** Writes {@code ascii} at {@code at}; returns where it ends. */
  private static int put(byte[] out, int at, String ascii) {
    for (int i = 0, n = ascii.length(); i < n; i++) {
      out[at + i] = (byte) ascii.charAt(i);
    }
    return at + ascii.length();
  }

  /**
   * The idempotency key of a record's Redis key, or null when {@code redisKey} is not a record key
   * of this prefix.
   */
  public IdempotencyKey idempotencyKey(byte[] redisKey) {
    String name = new String(redisKey, StandardCharsets.US_ASCII);
    String head = prefix + ' ';
    if (!name.startsWith(head)) {
      return null;
    }
    String[] parts = name.substring(head.length()).split(" ", 3);
    if (parts.length != 3) {
      return null;
    }
    try {
      return IdempotencyKey.of(parts[0], parts[1], parts[2]);
    } catch (IllegalArgumentException notAKey) {
      return null;
    }
  }

  /** The {@code SCAN MATCH} pattern of every record of this prefix (glob characters escaped). */
  public byte[] pattern() {
    StringBuilder glob = new StringBuilder();
    for (char c : prefix.toCharArray()) {
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
        glob.append('\\');
      }
      glob.append(c);
    }
    return ascii(glob.append(" *").toString());
  }

  private static byte[] ascii(String s) {
    // Keys are validated printable ASCII (IdempotencyKey), the prefix too (RedisStore.Builder).
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
