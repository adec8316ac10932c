package dev.once.examples.lambdasqs;

/** The side effect the handler must make once per order: a call to a shipping service. */
public interface Shipping {

  /**
   * Ships {@code order}.
   *
   * @param idempotencyKey a stable key for this order (Once's {@code attempt.key()}): pass it to
   *                       the shipping service so that a retry after a crash is deduplicated there
   * @throws OrderRejectedException a terminal failure: stored and never retried
   * @throws RuntimeException        anything else is retryable: the message comes back later
   */
  ShipmentReceipt ship(Order order, String idempotencyKey);

  /** The order cannot be shipped, now or ever (unknown SKU, bad quantity). Terminal. */
  final class OrderRejectedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public OrderRejectedException(String message) {
      super(message);
    }
  }
}
