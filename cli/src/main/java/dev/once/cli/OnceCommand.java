package dev.once.cli;

import dev.once.cli.chaos.ChaosCommand;
import dev.once.cli.demo.DemoCommand;
import dev.once.cli.support.CommandFailure;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

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
        MaintenanceCommand.Purge.class, MaintenanceCommand.Reap.class, BenchCommand.class, ServeCommand.class,
        ChaosCommand.class},
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
      print(commandLine, unknownCommand(ex, commandLine).orElse(ex.getMessage()));
      return commandLine.getCommandSpec().exitCodeOnInvalidInput();
    }

    /** "unknown command 'x', did you mean …" for a first word that names no command. */
    private static java.util.Optional<String> unknownCommand(ParameterException ex,
        CommandLine commandLine) {
      if (!(ex instanceof picocli.CommandLine.UnmatchedArgumentException unmatched)
          || commandLine.getCommandSpec().parent() != null
          || unmatched.getUnmatched().isEmpty()
          || unmatched.getUnmatched().get(0).startsWith("-")) {
        return java.util.Optional.empty();
      }
      String word = unmatched.getUnmatched().get(0);
      java.util.List<String> similar = commandLine.getSubcommands().keySet().stream()
          .filter(name -> name.startsWith(word) || distance(name, word) <= 2).toList();
      return java.util.Optional.of("unknown command '" + word + "'"
          + (similar.isEmpty() ? "" : ", did you mean " + String.join(" or ", similar) + "?")
          + "; the commands are " + String.join(", ", commandLine.getSubcommands().keySet())
          + " (once --help)");
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

    /** Edit distance with transpositions (optimal string alignment), for suggestions. */
    static int distance(String a, String b) {
      int[][] d = new int[a.length() + 1][b.length() + 1];
      for (int i = 0; i <= a.length(); i++) {
        d[i][0] = i;
      }
      for (int j = 0; j <= b.length(); j++) {
        d[0][j] = j;
      }
      for (int i = 1; i <= a.length(); i++) {
        for (int j = 1; j <= b.length(); j++) {
          int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
          d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
          if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2)
              && a.charAt(i - 2) == b.charAt(j - 1)) {
            d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
          }
        }
      }
      return d[a.length()][b.length()];
    }

    private static void print(CommandLine commandLine, String message) {
      String line = String.valueOf(message).replaceAll("\\R", " ").strip();
      commandLine.getErr().println(commandLine.getCommandSpec().qualifiedName() + ": " + line);
      commandLine.getErr().flush();
    }
  }
}
