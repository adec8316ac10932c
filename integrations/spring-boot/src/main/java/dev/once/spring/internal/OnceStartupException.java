package dev.once.spring.internal;

/**
 * Once could not be set up while the application started: what failed, and what to do about it,
 * which {@link OnceFailureAnalyzer} prints instead of the chain of bean creation exceptions.
 */
public final class OnceStartupException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String action;

  /** {@code description}: what failed; {@code action}: what to do. */
  public OnceStartupException(String description, String action, Throwable cause) {
    super(description, cause);
    this.action = action;
  }

  /** What to do about it. */
  public String action() {
    return action;
  }
}
