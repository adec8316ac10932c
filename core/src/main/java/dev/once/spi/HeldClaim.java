package dev.once.spi;

import dev.once.IdempotencyKey;
import java.util.Objects;

/**
 * A claim a worker holds: its key and fencing token, as {@link IdempotencyStore#extendAll}
 * extends it.
 *
 * @param key   the claimed key
 * @param token the claim's fencing token
 */
public record HeldClaim(IdempotencyKey key, long token) {
  public HeldClaim {
    Objects.requireNonNull(key, "key");
  }
}
