package dev.once.examples.payments;

/** The wallet holds less than the amount: a business outcome, stored and replayed like a charge. */
public class InsufficientFundsException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  public InsufficientFundsException(String wallet, long amount) {
    super("wallet " + wallet + " holds less than " + amount);
  }
}
