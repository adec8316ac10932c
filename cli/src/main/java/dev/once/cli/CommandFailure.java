package dev.once.cli;

/**
 * A command could not do its work for a reason the user can act on (a store that cannot be
 * reached): reported as one line, {@code <command>: <message>}, with {@link #exitCode()}, never as
 * a stack trace. See {@link OnceCommand.OneLineErrors}.
 */
final class CommandFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The exit code of bad input and of a store that cannot be used, as picocli's usage errors. */
  static final int CANNOT_RUN = 2;

  private final int exitCode;

  CommandFailure(int exitCode, String message) {
    super(message, null, false, false);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}
