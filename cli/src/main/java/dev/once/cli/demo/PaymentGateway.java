package dev.once.cli.demo;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * A payment provider: the side effect. Like Stripe it deduplicates a charge sent again with the
 * same {@code Idempotency-Key}, which is what makes a takeover's re-charge harmless. Counts the
 * money actually taken per event. Thread-safe.
 */
final class PaymentGateway {

  /** A short stand-in for a network round trip, so that workers really overlap. */
  private static final long LATENCY_NANOS = 100_000;

  private final AtomicIntegerArray chargesPerEvent;
  private final ConcurrentHashMap<String, String> chargeByIdempotencyKey = new ConcurrentHashMap<>();
  private final AtomicLong chargeIds = new AtomicLong();
  private final LongAdder charged = new LongAdder();
  private final LongAdder deduplicated = new LongAdder();

  PaymentGateway(int events) {
    this.chargesPerEvent = new AtomicIntegerArray(events);
  }

  /**
   * Charges {@code amountCents} for {@code event}; with an {@code idempotencyKey} already seen,
   * returns the earlier charge instead of charging again.
   *
   * @param idempotencyKey the downstream key, or null for a client that sends none
   * @return the charge id
   */
  String charge(int event, long amountCents, String idempotencyKey) {
    LockSupport.parkNanos(LATENCY_NANOS);
    if (idempotencyKey == null) {
      return newCharge(event, amountCents);
    }
    boolean[] fresh = new boolean[1];
    String id = chargeByIdempotencyKey.computeIfAbsent(idempotencyKey, k -> {
      fresh[0] = true;
      return newCharge(event, amountCents);
    });
    if (!fresh[0]) {
      deduplicated.increment();
    }
    return id;
  }

  private String newCharge(int event, long amountCents) {
    chargesPerEvent.incrementAndGet(event);
    charged.increment();
    return "ch_" + chargeIds.incrementAndGet() + "_" + amountCents;
  }

  /** Charges that took money. */
  long charged() {
    return charged.sum();
  }

  /** Charges answered from the idempotency-key cache instead of taking money again. */
  long deduplicated() {
    return deduplicated.sum();
  }

  /** Events charged more than once. */
  int doubleCharged() {
    int count = 0;
    for (int i = 0; i < chargesPerEvent.length(); i++) {
      if (chargesPerEvent.get(i) > 1) {
        count++;
      }
    }
    return count;
  }

  /** Events never charged. */
  int neverCharged() {
    int count = 0;
    for (int i = 0; i < chargesPerEvent.length(); i++) {
      if (chargesPerEvent.get(i) == 0) {
        count++;
      }
    }
    return count;
  }
}
