package dev.once;

/**
 * The store could not be reached or refused the operation for a transient reason (connection loss,
 * lock timeout, serialization failure). Retryable.
 *
 * <p>Whether the failed call took effect is in general <em>not known</em>: the store may have
 * applied a write whose answer was lost on the way back. {@link #mayHaveBeenApplied()} is false
 * only where the store knows nothing was written (it never got a connection, or its transaction
 * was rolled back). Stores recognise their own earlier writes, so repeating the same call is safe.
 * What it means for a caller of {@link Once}: a failed claim ran nothing; a failed completion
 * after the work returned is {@link OutcomeUnknownException}.
 */
public class StoreUnavailableException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final boolean mayHaveBeenApplied;

  /** A failure after which the call may or may not have taken effect. */
  public StoreUnavailableException(String message, Throwable cause) {
    this(message, cause, true);
  }

  /**
   * A failure; {@code mayHaveBeenApplied} false only when the store knows the call changed
   * nothing.
   */
  public StoreUnavailableException(String message, Throwable cause, boolean mayHaveBeenApplied) {
    super(message, cause);
    this.mayHaveBeenApplied = mayHaveBeenApplied;
  }

  /**
   * False when the store knows the call changed nothing; true when it may have been applied
   * although it failed (the answer was lost, a commit's fate is unknown).
   */
  public boolean mayHaveBeenApplied() {
    return mayHaveBeenApplied;
  }
}
