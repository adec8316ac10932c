package dev.once.examples.payments;

/**
 * Charges and refunds wallets, each at most once per key: what the order saga and the payment
 * requests listener need from {@link Wallets} (an interface, so their tests can stand in for it).
 */
public interface Payments {

  /**
   * Debits {@code request.amount()} from the wallet once per {@code paymentKey}: a second call
   * with the key returns the first charge.
   *
   * @throws InsufficientFundsException if the wallet holds less (stored and replayed too)
   */
  Charge charge(String paymentKey, ChargeRequest request);

  /** Credits {@code charge} back to its wallet, once per {@code refundKey}. */
  void refund(String refundKey, Charge charge);
}
