package dev.once.dynamodb.internal;

/** The value of DynamoDB's TTL attribute. */
final class Ttl {

  private static final long PER_SECOND = 1_000_000L;

  private Ttl() {}

  /**
   * Epoch seconds of {@code micros}, rounded up: DynamoDB may delete an item once its TTL is
   * past, so the TTL must never be earlier than the logical expiry.
   */
  static long seconds(long micros) {
    return Math.floorDiv(micros, PER_SECOND) + (Math.floorMod(micros, PER_SECOND) == 0 ? 0 : 1);
  }
}
