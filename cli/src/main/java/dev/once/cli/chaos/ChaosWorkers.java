package dev.once.cli.chaos;

import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The worker processes of a {@code once chaos} run: a fixed number of slots, each holding one
 * running JVM ({@link ChaosWorker}); a killed worker is replaced by a new process with a new id.
 * Faults are real signals: {@code SIGKILL} ({@link Process#destroyForcibly()}), {@code SIGSTOP}
 * and {@code SIGCONT} (through the {@code kill} command; Java has no API for them).
 *
 * <p>Every process's output (errors only) is appended to {@value #LOG} in the run directory.
 * {@link #close()} kills every process still running; the coordinator also calls it from its
 * shutdown hook. Not thread-safe, except {@link #close()}.
 */
final class ChaosWorkers implements AutoCloseable {

  static final String LOG = "workers.log";
  /**
   * The environment variable holding a worker's slot (0 to N-1): a replacement has its
   * predecessor's, a stable identity (Kafka's static group membership).
   */
  static final String SLOT_ENV = "ONCE_CHAOS_SLOT";
  /** How long a stopping worker may take to finish its delivery before it is killed. */
  private static final long STOP_MILLIS = 15_000;
  /** How long a JVM takes to start and reach its first delivery, roughly. */
  static final long WARM_MILLIS = 1_500;
  /** How long a worker sent SIGTERM may take to stop gracefully before it is killed. */
  static final long TERM_MILLIS = 30_000;

  private final List<String> command;
  private final Map<String, String> environment;
  private final Path runDirectory;
  private final Process[] processes;
  private final int[] ids;
  private final boolean[] frozen;
  private final long[] startedAt;
  /** When the worker of a slot was sent SIGTERM; 0 if it was not. */
  private final long[] terminatedAt;
  private int nextId = 1;
  private int started;
  private int exitedByThemselves;
  private int terminated;
  private int termTimeouts;

  /**
   * @param command     the worker's command line without {@code --worker ID}
   * @param environment added to each worker's environment (the store URI)
   */
  ChaosWorkers(List<String> command, Map<String, String> environment, Path runDirectory,
      int slots) {
    this.command = List.copyOf(command);
    this.environment = Map.copyOf(environment);
    this.runDirectory = runDirectory;
    this.processes = new Process[slots];
    this.ids = new int[slots];
    this.frozen = new boolean[slots];
    this.startedAt = new long[slots];
    this.terminatedAt = new long[slots];
  }

  /** Starts a worker in every slot. */
  void startAll() throws IOException {
    for (int slot = 0; slot < processes.length; slot++) {
      start(slot);
    }
  }

  private void start(int slot) throws IOException {
    int id = nextId++;
    List<String> line = new ArrayList<>(command);
    line.add("--worker");
    line.add(Integer.toString(id));
    ProcessBuilder builder = new ProcessBuilder(line);
    builder.environment().putAll(environment);
    builder.environment().put(SLOT_ENV, Integer.toString(slot));
    builder.redirectErrorStream(true);
    builder.redirectOutput(Redirect.appendTo(runDirectory.resolve(LOG).toFile()));
    builder.redirectInput(Redirect.from(nullFile()));
    synchronized (this) {
      processes[slot] = builder.start();
    }
    ids[slot] = id;
    frozen[slot] = false;
    terminatedAt[slot] = 0;
    startedAt[slot] = System.currentTimeMillis();
    started++;
  }

  private static java.io.File nullFile() {
    return new java.io.File(System.getProperty("os.name").startsWith("Windows") ? "NUL"
        : "/dev/null");
  }

  /**
   * A random slot whose worker runs and is not frozen, or -1; one started at least
   * {@value #WARM_MILLIS} ms ago if there is one, so that faults hit workers in the middle of
   * their work rather than JVMs still starting.
   */
  int pickWorking(Random random) {
    List<Integer> warm = new ArrayList<>();
    List<Integer> any = new ArrayList<>();
    long now = System.currentTimeMillis();
    for (int slot = 0; slot < processes.length; slot++) {
      if (!frozen[slot] && terminatedAt[slot] == 0 && processes[slot].isAlive()) {
        any.add(slot);
        if (now - startedAt[slot] >= WARM_MILLIS) {
          warm.add(slot);
        }
      }
    }
    List<Integer> candidates = warm.isEmpty() ? any : warm;
    return candidates.isEmpty() ? -1 : candidates.get(random.nextInt(candidates.size()));
  }

  /** {@code kill -9} the worker of {@code slot}, and start a replacement. */
  void kill(int slot) throws IOException, InterruptedException {
    Process p = processes[slot];
    p.destroyForcibly();
    p.waitFor(5, TimeUnit.SECONDS);
    start(slot);
  }

  /**
   * Sends {@code SIGTERM} to the worker of {@code slot}: its shutdown hook stops it gracefully.
   * {@link #replaceExited()} starts its replacement once it has exited, or kills it after
   * {@value #TERM_MILLIS} ms.
   */
  void terminate(int slot) {
    processes[slot].destroy(); // SIGTERM on POSIX
    terminatedAt[slot] = System.currentTimeMillis();
  }

  /** Workers sent SIGTERM that exited by themselves (gracefully). */
  int terminated() {
    return terminated;
  }

  /** Workers sent SIGTERM that had not exited after {@value #TERM_MILLIS} ms, and were killed. */
  int termTimeouts() {
    return termTimeouts;
  }

  /** {@code SIGSTOP}s the worker of {@code slot}: it keeps its connections and its leases. */
  void freeze(int slot) throws IOException, InterruptedException {
    signal(processes[slot], "STOP");
    frozen[slot] = true;
  }

  /** {@code SIGCONT}s the worker of {@code slot}, if frozen. */
  void thaw(int slot) throws IOException, InterruptedException {
    if (frozen[slot]) {
      frozen[slot] = false;
      if (processes[slot].isAlive()) {
        signal(processes[slot], "CONT");
      }
    }
  }

  void thawAll() throws IOException, InterruptedException {
    for (int slot = 0; slot < processes.length; slot++) {
      thaw(slot);
    }
  }

  boolean frozen(int slot) {
    return frozen[slot];
  }

  int pid(int slot) {
    return (int) processes[slot].pid();
  }

  int id(int slot) {
    return ids[slot];
  }

  /**
   * Replaces the workers that exited without being killed; how many did. A worker sent SIGTERM is
   * replaced once it exited (counted as {@link #terminated()}), or killed and replaced after
   * {@value #TERM_MILLIS} ms (counted as {@link #termTimeouts()}).
   */
  int replaceExited() throws IOException, InterruptedException {
    int replaced = 0;
    for (int slot = 0; slot < processes.length; slot++) {
      if (terminatedAt[slot] != 0) {
        if (!processes[slot].isAlive()) {
          terminated++;
          start(slot);
        } else if (System.currentTimeMillis() - terminatedAt[slot] > TERM_MILLIS) {
          termTimeouts++;
          kill(slot);
        }
        continue;
      }
      if (!processes[slot].isAlive()) {
        exitedByThemselves++;
        replaced++;
        start(slot);
      }
    }
    return replaced;
  }

  /** Processes started, replacements included. */
  int started() {
    return started;
  }

  /** Workers that exited while they should have been running (a crash, not a kill). */
  int exitedByThemselves() {
    return exitedByThemselves;
  }

  /**
   * Asks every worker to stop (the stop file), waits for them to finish their delivery, and kills
   * those still running after the time allowed.
   */
  void stop() throws IOException, InterruptedException {
    Files.writeString(runDirectory.resolve(ChaosWorker.STOP_FILE), "stop\n");
    thawAll();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_MILLIS);
    for (Process p : processes) {
      long left = deadline - System.nanoTime();
      if (left > 0) {
        p.waitFor(left, TimeUnit.NANOSECONDS);
      }
    }
    close();
  }

  private static void signal(Process p, String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid()))
        .redirectErrorStream(true).start();
    if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      kill.destroyForcibly();
      if (p.isAlive()) {
        throw new IOException("kill -" + signal + " " + p.pid() + " failed");
      }
    }
  }

  /** Kills every worker still running ({@code SIGKILL} ends a stopped process too). */
  @Override
  public synchronized void close() {
    for (Process p : processes) {
      if (p != null && p.isAlive()) {
        p.destroyForcibly();
      }
    }
    for (Process p : processes) {
      if (p != null) {
        try {
          p.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
