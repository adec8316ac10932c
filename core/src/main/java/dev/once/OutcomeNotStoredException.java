package dev.once;

/**
 * A duplicate of an operation that ran and succeeded, but whose result could not be stored: it
 * was larger than the payload bound, or its codec failed. The key is finished and the work is
 * not run again; only its value is missing. The caller that ran the work got the value; every
 * duplicate gets this exception instead of a re-run.
 */
public class OutcomeNotStoredException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;
  private final String reason;

  public OutcomeNotStoredException(IdempotencyKey key, String reason) {
    super("idempotency key " + key + " already ran and succeeded, but its result was not stored ("
        + reason + "); it is not run again");
    this.key = key;
    this.reason = reason;
  }

  public IdempotencyKey key() {
    return key;
  }

  /** Why the result was not kept, as recorded when the work finished. */
  public String reason() {
    return reason;
  }
}
