package dev.once.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import java.util.concurrent.Callable;

/**
 * The {@code once} command. Subcommands: {@code demo}, a concurrent payments scenario run with and
 * without Once; {@code schema}, the DDL of a SQL store; {@code inspect}, the records of keys;
 * {@code purge} and {@code reap}, one maintenance pass.
 *
 * <pre>{@code
 * once demo --events 5000 --workers 8
 * once demo --store postgres://app:secret@db:5432/app
 * }</pre>
 */
@Command(name = "once", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    description = "Exactly-once effects on top of at-least-once delivery.",
    subcommands = {DemoCommand.class, SchemaCommand.class, InspectCommand.class,
        MaintenanceCommand.Purge.class, MaintenanceCommand.Reap.class, BenchCommand.class, ServeCommand.class},
    modelTransformer = OnceCommand.OneLineErrors.class)
public final class OnceCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  /** Runs the command line and exits with its exit code. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new OnceCommand()).execute(args));
  }

  @Override
  public Integer call() {
    throw new ParameterException(spec.commandLine(),
        "missing command: try 'once demo' or 'once --help'");
  }

  /**
   * Reports bad input as one line on stderr with exit code 2, instead of picocli's default of the
   * message followed by the whole usage help: a user who typed {@code --workers 0} needs the reason,
   * not 30 lines of options.
   *
   * <p>A {@link CommandFailure} thrown by a command (a store that cannot be reached) is reported
   * the same way, with its exit code; any other exception is a bug and keeps picocli's default
   * (stack trace, exit code 1).
   *
   * <p>Installed as a model transformer because that is the one hook picocli calls with the
   * {@link CommandLine} already attached, so that {@code new CommandLine(new OnceCommand())} in
   * {@link #main} and in tests gets the same error handling without extra set-up.
   */
  static final class OneLineErrors
      implements IModelTransformer, IParameterExceptionHandler, IExecutionExceptionHandler {

    @Override
    public CommandSpec transform(CommandSpec spec) {
      CommandLine commandLine = spec.commandLine();
      if (commandLine != null) {
        commandLine.setParameterExceptionHandler(this);
        commandLine.setExecutionExceptionHandler(this);
      }
      return spec;
    }

    @Override
    public int handleParseException(ParameterException ex, String[] args) {
      CommandLine commandLine = ex.getCommandLine();
      print(commandLine, ex.getMessage());
      return commandLine.getCommandSpec().exitCodeOnInvalidInput();
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine commandLine,
        ParseResult parseResult) throws Exception {
      if (ex instanceof CommandFailure failure) {
        print(commandLine, failure.getMessage());
        return failure.exitCode();
      }
      throw ex;
    }

    private static void print(CommandLine commandLine, String message) {
      String line = String.valueOf(message).replaceAll("\\R", " ").strip();
      commandLine.getErr().println(commandLine.getCommandSpec().qualifiedName() + ": " + line);
      commandLine.getErr().flush();
    }
  }
}
