package dev.once.webflux.internal;

/**
 * Thrown out of the filter's work after the application answered, to release the claim as
 * retryable (FAILED) instead of storing the response. Carries no stack trace: it is a signal.
 */
public final class ResponseNotStored extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient System.Logger.Level level;

  public ResponseNotStored(String reason, System.Logger.Level level) {
    super(reason, null, false, false);
    this.level = level;
  }

  /** How loudly the filter logs the release. */
  public System.Logger.Level level() {
    return level;
  }
}
