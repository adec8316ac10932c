package dev.once.cli.support;

/**
 * A command could not do its work for a reason the user can act on (a store that cannot be
 * reached): reported as one line, {@code <command>: <message>}, with {@link #exitCode()}, never as
 * a stack trace. See {@code dev.once.cli.OnceCommand.OneLineErrors}.
 */
public final class CommandFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The exit code of bad input and of a store that cannot be used, as picocli's usage errors. */
  public static final int CANNOT_RUN = 2;

  private final int exitCode;

  /** A failure reported as {@code message} (one line), the command exiting with {@code exitCode}. */
  public CommandFailure(int exitCode, String message) {
    super(message, null, false, false);
    this.exitCode = exitCode;
  }

  /** The exit code the command ends with. */
  public int exitCode() {
    return exitCode;
  }
}
