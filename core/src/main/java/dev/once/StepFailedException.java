package dev.once;

/**
 * A step of the work failed terminally in an earlier attempt: the failure was journaled, and every
 * later attempt that reaches the step gets it instead of running the step again. Always terminal
 * for the {@link FailurePolicy}.
 */
public class StepFailedException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final String step;
  private final String failureType;
  private final String failureMessage;

  public StepFailedException(IdempotencyKey key, String step, String failureType,
      String failureMessage) {
    super("step '" + step + "' of " + key + " failed terminally: " + failureType
        + (failureMessage.isEmpty() ? "" : ": " + failureMessage));
    this.step = step;
    this.failureType = failureType;
    this.failureMessage = failureMessage;
  }

  /** The step's name. */
  public String step() {
    return step;
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
