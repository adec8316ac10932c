package dev.once.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A worker in a JVM of its own, on the test's class path, for faults only a process can take: a
 * {@code SIGTERM} ({@link #terminate}, which runs the worker's shutdown hooks as a rolling deploy
 * does), a {@code kill -9} ({@link #kill}). The test reads what the worker prints, line by line,
 * to know when to strike ({@link #awaitLine}). Killed at the latest when closed.
 */
public final class ChildJvm implements AutoCloseable {

  private final Process process;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final List<String> output = new ArrayList<>();

  private ChildJvm(Process process) {
    this.process = process;
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          synchronized (output) {
            output.add(line);
          }
          lines.add(line);
        }
      } catch (IOException e) {
        // the process ended
      }
    }, "child-jvm-output");
    reader.setDaemon(true);
    reader.start();
  }

  /** Starts {@code mainClass} with {@code args} in a new JVM on this JVM's class path. */
  public static ChildJvm start(Class<?> mainClass, String... args) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx256m");
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass.getName());
    command.addAll(List.of(args));
    try {
      return new ChildJvm(new ProcessBuilder(command).redirectErrorStream(true).start());
    } catch (IOException e) {
      throw new IllegalStateException("could not start " + mainClass.getName(), e);
    }
  }

  /**
   * Waits until the worker prints a line equal to {@code line}.
   *
   * @throws AssertionError if it does not within {@code bound} (with what it printed)
   */
  public void awaitLine(String line, Duration bound) {
    long deadline = System.nanoTime() + bound.toNanos();
    try {
      while (true) {
        long left = deadline - System.nanoTime();
        String next = left <= 0 ? null : lines.poll(left, TimeUnit.NANOSECONDS);
        if (next == null) {
          throw new AssertionError("the worker did not print '" + line + "' within " + bound
              + (process.isAlive() ? "" : " (it exited with " + process.exitValue() + ")")
              + "; it printed:\n" + output());
        }
        if (next.equals(line)) {
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /**
   * Sends {@code SIGTERM} (the JVM runs its shutdown hooks) and waits for the exit.
   *
   * @return the exit code
   * @throws AssertionError if the worker has not exited within {@code bound}
   */
  public int terminate(Duration bound) {
    process.destroy(); // SIGTERM on Unix
    return awaitExit(bound);
  }

  /** Sends {@code SIGKILL} and waits for the exit; returns the exit code. */
  public int kill() {
    process.destroyForcibly();
    return awaitExit(Duration.ofSeconds(30));
  }

  private int awaitExit(Duration bound) {
    try {
      if (!process.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError("the worker did not exit within " + bound + "; it printed:\n"
            + output());
      }
      return process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /** Everything the worker printed so far. */
  public String output() {
    synchronized (output) {
      return String.join("\n", output);
    }
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
  }
}
