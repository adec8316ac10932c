package dev.once.examples.lambdasqs;

/** A stand-in shipping service for the deployed example: logs and returns a tracking number. */
final class LoggingShipping implements Shipping {

  private static final System.Logger LOG = System.getLogger(LoggingShipping.class.getName());

  @Override
  public ShipmentReceipt ship(Order order, String idempotencyKey) {
    if (order.quantity() <= 0) {
      throw new OrderRejectedException("quantity must be positive, was " + order.quantity());
    }
    LOG.log(System.Logger.Level.INFO, "shipping {0} x {1} for order {2} (key {3})",
        order.quantity(), order.sku(), order.orderId(), idempotencyKey);
    return new ShipmentReceipt(order.orderId(), "TRK-" + idempotencyKey.substring(5, 17));
  }
}
