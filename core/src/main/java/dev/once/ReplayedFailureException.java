package dev.once;

/**
 * A duplicate of an operation that ended in a terminal failure: the failure is replayed, the logic
 * is not run again. {@link #failureType()} and {@link #failureMessage()} describe the original
 * exception.
 */
public class ReplayedFailureException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;
  private final String failureType;
  private final String failureMessage;

  public ReplayedFailureException(IdempotencyKey key, String failureType, String failureMessage) {
    super("idempotency key " + key + " already failed terminally: " + failureType
        + (failureMessage.isEmpty() ? "" : ": " + failureMessage));
    this.key = key;
    this.failureType = failureType;
    this.failureMessage = failureMessage;
  }

  public IdempotencyKey key() {
    return key;
  }

  /** The class name of the original exception. */
  public String failureType() {
    return failureType;
  }

  /** The message of the original exception, "" when it had none. */
  public String failureMessage() {
    return failureMessage;
  }
}
