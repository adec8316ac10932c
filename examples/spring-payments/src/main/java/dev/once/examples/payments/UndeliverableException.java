package dev.once.examples.payments;

/** The courier does not deliver to the address: the order fails for good. */
public class UndeliverableException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public UndeliverableException(String address) {
    super("no courier delivers to " + address);
  }
}
