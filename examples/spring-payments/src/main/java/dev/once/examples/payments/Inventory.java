package dev.once.examples.payments;

/** Reserves stock for orders, and releases reservations. */
public interface Inventory {

  /**
   * Reserves {@code quantity} of {@code sku}, once per {@code reference}: a second call with the
   * reference returns the first reservation.
   *
   * @return the reservation's id
   * @throws OutOfStockException if fewer are available
   */
  String reserve(String sku, int quantity, String reference);

  /** Puts a reservation's stock back; a released reservation is not released again. */
  void release(String reservation);
}
