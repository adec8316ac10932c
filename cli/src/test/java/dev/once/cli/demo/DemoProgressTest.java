package dev.once.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.once.InMemoryStore;
import dev.once.cli.OnceCommand;
import dev.once.cli.support.Progress;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The demo's progress bar (issue 18): the figures it is fed, and the demo on a real
 * pseudo-terminal, where the bar is drawn. Its arithmetic at the edges:
 * {@code ProgressTest}.
 */
class DemoProgressTest {

  /**
   * The cause of issue 18: the bar was fed events minus unacknowledged messages, negative while
   * duplicates were outstanding. It is fed acknowledged messages now: from 0 to every message.
   */
  @Test
  void theScenarioCountsAcknowledgedMessagesFromZeroToAll() throws Exception {
    DeliveryPlan plan = DeliveryPlan.generate(300, 0.5, 0.1, 5);
    assertThat(plan.messages().size()).isGreaterThan(plan.events().size());
    try (InMemoryStore store = new InMemoryStore()) {
      PaymentsScenario scenario = new PaymentsScenario(plan, 4, Duration.ofMillis(20), store,
          "payments.charge.progress");
      assertThat(scenario.messages()).isEqualTo(plan.messages().size());
      List<Long> samples = new CopyOnWriteArrayList<>();
      Thread sampler = new Thread(() -> {
        while (!Thread.currentThread().isInterrupted()) {
          samples.add(scenario.acknowledged());
          try {
            Thread.sleep(0, 200_000);
          } catch (InterruptedException e) {
            return;
          }
        }
      });
      sampler.start();
      try {
        scenario.runWithoutOnce();
        scenario.runWithOnce();
      } finally {
        sampler.interrupt();
        sampler.join();
      }
      assertThat(samples).isNotEmpty()
          .allSatisfy(n -> assertThat(n).isBetween(0L, (long) scenario.messages()));
      assertThat(samples).contains(0L).anySatisfy(n -> assertThat(n).isPositive());
    }
  }

  /**
   * {@code once demo} on a pseudo-terminal of {@code columns} columns, through {@code script}, so
   * that {@code System.console()} is there and the bar is drawn (from the start, not after a
   * second): exit 0, no stack trace, every frame within the width and its counts in range.
   */
  @ParameterizedTest(name = "{0} columns")
  @ValueSource(ints = {120, 80, 50})
  void theDemoOnARealTerminalDrawsItsProgressWithoutAStackTrace(int columns) throws Exception {
    Path script = Path.of("/usr/bin/script");
    assumeTrue(Files.isExecutable(script) || onPath("script"),
        "needs script(1) from util-linux to run the demo on a pseudo-terminal");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String command = String.join(" ", "stty cols " + columns + " rows 40;", "exec",
        quote(java), "-D" + Progress.DELAY_PROPERTY + "=0", "-cp",
        quote(System.getProperty("java.class.path")), OnceCommand.class.getName(), "demo",
        "--events", "300", "--seed", "42", "--lease-ms", "40", "--store", "memory:",
        "--no-report");
    ProcessBuilder builder = new ProcessBuilder("script", "-q", "-e", "-c", command, "/dev/null")
        .redirectErrorStream(true);
    // The width must come from the terminal, as for a user whose shell does not export COLUMNS.
    builder.environment().remove("COLUMNS");
    Process process = builder.start();
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    Thread reader = new Thread(() -> {
      try (InputStream in = process.getInputStream()) {
        in.transferTo(captured);
      } catch (java.io.IOException e) {
        // the process went away
      }
    });
    reader.start();
    boolean exited = process.waitFor(3, TimeUnit.MINUTES);
    if (!exited) {
      process.destroyForcibly();
    }
    reader.join(10_000);
    String out = captured.toString(StandardCharsets.UTF_8);

    assertThat(exited).as(out).isTrue();
    assertThat(process.exitValue()).as(out).isZero();
    assertThat(out).doesNotContain("Exception", "\tat ", "once-progress")
        .contains("double charges", "Once: 0 double charges");
    int messages = DeliveryPlan.generate(300, 0.3, 0.05, 42).messages().size();
    List<String> frames = frames(out);
    assertThat(frames).as(out)
        .anySatisfy(f -> assertThat(f).startsWith("without Once "))
        .anySatisfy(f -> assertThat(f).startsWith("with Once    "));
    Pattern counts = Pattern.compile("(\\d+)/(\\d+)$");
    for (String frame : frames) {
      assertThat(frame.length()).as(frame).isLessThan(columns);
      Matcher m = counts.matcher(frame);
      assertThat(m.find()).as(frame).isTrue();
      assertThat(Long.parseLong(m.group(2))).as(frame).isEqualTo(messages);
      assertThat(Long.parseLong(m.group(1))).as(frame).isBetween(0L, (long) messages);
    }
  }

  /**
   * What the bar drew: every redraw starts with a carriage return and a clear-line, and runs to
   * the next carriage return. The clear-line that removes the bar at the end is followed by what
   * the demo prints next (the table, on stdout): not a frame.
   */
  private static List<String> frames(String out) {
    List<String> frames = new ArrayList<>();
    for (String piece : out.split("\r")) {
      if (piece.startsWith("\033[2K")) {
        String frame = piece.substring("\033[2K".length());
        if (frame.startsWith("without Once") || frame.startsWith("with Once")) {
          frames.add(frame);
        }
      }
    }
    return frames;
  }

  private static boolean onPath(String program) {
    String path = System.getenv("PATH");
    if (path == null) {
      return false;
    }
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, program))) {
        return true;
      }
    }
    return false;
  }

  /** Single-quoted for sh. */
  private static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
