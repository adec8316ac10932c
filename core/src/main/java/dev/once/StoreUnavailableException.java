package dev.once;

/**
 * The store could not be reached or refused the operation for a transient reason (connection loss,
 * lock timeout, serialization failure). Retryable: nothing was recorded as an outcome.
 */
public class StoreUnavailableException extends OnceException {
  private static final long serialVersionUID = 1L;

  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
