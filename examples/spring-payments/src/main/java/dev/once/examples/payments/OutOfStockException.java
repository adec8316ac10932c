package dev.once.examples.payments;

/** Fewer units are available than ordered: the order fails for good. */
public class OutOfStockException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public OutOfStockException(String sku, int quantity) {
    super("fewer than " + quantity + " of " + sku + " in stock");
  }
}
