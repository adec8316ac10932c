package dev.once.redis.internal;

import dev.once.IdempotencyKey;

/**
 * An operation on one record, as messages name it ("claim of orders/42"). Passed where a message
 * may be needed, so that its text is built only when one is: every call used to build it, and
 * nearly every call needs none.
 */
record Operation(String verb, IdempotencyKey key) {

  @Override
  public String toString() {
    return verb + " of " + key;
  }
}
