package dev.once;

/**
 * The work ran and returned (or failed terminally), but storing its outcome failed, also when
 * tried again: whether the outcome is stored is unknown. Do not compensate on this exception. The
 * key is safe to retry: a retry replays the outcome if it was stored; if it was not, the key stays
 * in progress until the lease passes and the retry after that runs the work again (deduplicate such
 * a re-run downstream with {@link Attempt#key()}). A {@link StoreUnavailableException}, so code
 * that retries on store trouble keeps working.
 */
public class OutcomeUnknownException extends StoreUnavailableException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;
  private final long token;

  public OutcomeUnknownException(IdempotencyKey key, long token, StoreUnavailableException cause) {
    super("the work for " + key + " ran, but storing its outcome failed (" + cause.getMessage()
        + "); whether it was stored is unknown: a retry of the key replays it if it was, and "
        + "otherwise runs the work again once the lease (token " + token + ") passes", cause);
    this.key = key;
    this.token = token;
  }

  public IdempotencyKey key() {
    return key;
  }

  /** The fencing token the work ran under. */
  public long token() {
    return token;
  }
}
