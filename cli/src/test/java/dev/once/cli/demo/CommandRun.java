package dev.once.cli.demo;

import dev.once.cli.OnceCommand;
import dev.once.cli.demo.DemoCommand;
import dev.once.cli.demo.DemoResult;
import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** One in-process run of the command line, with what it printed and the demo's figures. */
public record CommandRun(int exitCode, String out, String err, DemoResult result, String scope) {

  /**
   * Runs {@code args}; a demo writes no HTML report unless the arguments ask for one, so that tests
   * leave nothing in the working directory.
   */
  public static CommandRun run(String... args) {
    if (args.length > 0 && args[0].equals("demo")
        && java.util.Arrays.stream(args).noneMatch(a -> a.startsWith("--report")
            || a.equals("--no-report") || a.equals("--help"))) {
      args = java.util.Arrays.copyOf(args, args.length + 1);
      args[args.length - 1] = "--no-report";
    }
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = new CommandLine(new OnceCommand());
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    int exitCode = commandLine.execute(args);
    DemoCommand demo = commandLine.getSubcommands().get("demo").getCommand();
    return new CommandRun(exitCode, out.toString(), err.toString(), demo.lastResult(),
        demo.lastScope());
  }
}
