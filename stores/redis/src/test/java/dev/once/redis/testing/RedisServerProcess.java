package dev.once.redis.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A private {@code redis-server} for tests: its own temporary directory, a free port on
 * 127.0.0.1, no snapshots, killed at JVM exit at the latest. Finds the binary at
 * {@code $ONCE_REDIS_SERVER}, {@code /usr/bin/redis-server}, {@code /usr/local/bin/redis-server} or
 * on the {@code PATH} (Debian: {@code apt-get install redis-server}).
 *
 * <pre>{@code
 * try (RedisServerProcess redis = RedisServerProcess.start()) {
 *   RedisClient client = RedisClient.create(redis.uri());
 *   ...
 * }
 * }</pre>
 *
 * Published in {@code dev.once:once-redis}'s test-jar ({@code <type>test-jar</type>}) for the
 * tests of other modules.
 */
public final class RedisServerProcess implements AutoCloseable {

  private static final Set<RedisServerProcess> RUNNING = ConcurrentHashMap.newKeySet();
  private static final String HOST = "127.0.0.1";

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      for (RedisServerProcess p : List.copyOf(RUNNING)) {
        p.close();
      }
    }, "redis-server-cleanup"));
  }

  private final Path dir;
  private final int port;
  private final List<String> args;
  private Process process;

  private RedisServerProcess(Path dir, int port, List<String> args) {
    this.dir = dir;
    this.port = port;
    this.args = args;
  }

  /** A plain server: no persistence at all. */
  public static RedisServerProcess start() {
    return builder().start();
  }

  /** Configures a server. */
  public static Builder builder() {
    return new Builder();
  }

  /** What to start. */
  public static final class Builder {
    private boolean aof;
    private boolean cluster;
    private RedisServerProcess primary;
    private int port;
    private final List<String> extra = new ArrayList<>();

    private Builder() {}

    /** Append-only file with {@code appendfsync always}: every acknowledged write survives a kill. */
    public Builder appendOnlyFsyncAlways() {
      this.aof = true;
      return this;
    }

    /** {@code --cluster-enabled yes} (the cluster bus port, port + 10000, is free too). */
    public Builder clusterEnabled() {
      this.cluster = true;
      return this;
    }

    /** A replica of {@code primary}. */
    public Builder replicaOf(RedisServerProcess primary) {
      this.primary = primary;
      return this;
    }

    /**
     * Listen on {@code port} (e.g. one from {@link RedisServerProcess#freePort()} that a client
     * was pointed at before the server started) instead of a free port of its own choosing.
     */
    public Builder port(int port) {
      if (port < 1 || port > 65_535) {
        throw new IllegalArgumentException("not a port: " + port);
      }
      this.port = port;
      return this;
    }

    /** More {@code redis-server} arguments, e.g. {@code "--maxmemory", "10mb"}. */
    public Builder arg(String... args) {
      Collections.addAll(extra, args);
      return this;
    }

    /** Starts the server and waits until it answers PING. */
    public RedisServerProcess start() {
      IllegalStateException last = null;
      for (int attempt = 0; attempt < (this.port == 0 ? 5 : 1); attempt++) {
        // Another process may take the free port between probe and bind: try another one.
        int port = this.port != 0 ? this.port : freePort(cluster);
        Path dir;
        try {
          dir = Files.createTempDirectory("once-redis-" + port + "-");
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        List<String> args = new ArrayList<>(List.of("--port", Integer.toString(port),
            "--bind", HOST, "--dir", dir.toString(), "--save", "", "--daemonize", "no",
            "--protected-mode", "no", "--repl-diskless-sync-delay", "0"));
        if (aof) {
          args.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
        } else {
          args.addAll(List.of("--appendonly", "no"));
        }
        if (cluster) {
          args.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file",
              dir.resolve("nodes.conf").toString(), "--cluster-node-timeout", "2000"));
        }
        if (primary != null) {
          args.addAll(List.of("--replicaof", HOST, Integer.toString(primary.port())));
        }
        args.addAll(extra);
        RedisServerProcess server = new RedisServerProcess(dir, port, List.copyOf(args));
        try {
          server.launch();
          return server;
        } catch (IllegalStateException e) {
          server.close();
          last = e;
        }
      }
      throw last;
    }
  }

  /** The port on 127.0.0.1. */
  public int port() {
    return port;
  }

  /** {@code 127.0.0.1}. */
  public String host() {
    return HOST;
  }

  /** {@code redis://127.0.0.1:port}. */
  public String uri() {
    return "redis://" + HOST + ":" + port;
  }

  /** The server's working directory (AOF, cluster config, log). */
  public Path dir() {
    return dir;
  }

  /** Whether the process is alive. */
  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Sends one command (see {@link Resp#call}). */
  public Object call(String... command) {
    return Resp.call(HOST, port, command);
  }

  /** Kills the server at once (SIGKILL): a crash; nothing is flushed that was not already. */
  public synchronized void kill() {
    if (process != null) {
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      process = null;
    }
  }

  /**
   * Pauses the server ({@code SIGSTOP}): it keeps its connections and its role, and answers
   * nothing until {@link #thaw()}, as a primary in a long GC-like pause or behind a partition.
   */
  public synchronized void freeze() {
    signal("STOP");
  }

  /** Resumes a {@link #freeze() frozen} server ({@code SIGCONT}). */
  public synchronized void thaw() {
    signal("CONT");
  }

  private void signal(String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
          .redirectErrorStream(true).start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Starts the killed server again on the same port and directory (an AOF is replayed). */
  public synchronized void restart() {
    if (isRunning()) {
      throw new IllegalStateException("redis-server on port " + port + " is running");
    }
    launch();
  }

  /** Kills the server and deletes its directory. */
  @Override
  public synchronized void close() {
    kill();
    RUNNING.remove(this);
    try (var paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // best effort: a temporary directory
    }
  }

  private synchronized void launch() {
    List<String> command = new ArrayList<>();
    command.add(binary());
    command.addAll(args);
    try {
      process = new ProcessBuilder(command)
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile()))
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + command.get(0), e);
    }
    RUNNING.add(this);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException("redis-server on port " + port + " exited: " + log());
      }
      try {
        if ("PONG".equals(call("PING"))) {
          return;
        }
      } catch (UncheckedIOException | Resp.ErrorReply e) {
        // not listening yet, or still loading its AOF
      }
      pause();
    }
    kill();
    throw new IllegalStateException("redis-server on port " + port + " did not answer: " + log());
  }

  private String log() {
    try {
      return Files.readString(dir.resolve("redis.log"));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  /** Waits 10 ms between two polls of a process, so that polling does not take a core from it. */
  public static void pause() {
    try {
      Thread.sleep(10);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** The redis-server binary. */
  static String binary() {
    String configured = System.getenv("ONCE_REDIS_SERVER");
    if (configured != null && !configured.isBlank()) {
      return configured;
    }
    for (String candidate : List.of("/usr/bin/redis-server", "/usr/local/bin/redis-server")) {
      if (Files.isExecutable(Path.of(candidate))) {
        return candidate;
      }
    }
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(java.io.File.pathSeparator)) {
      Path p = Path.of(dir, "redis-server");
      if (Files.isExecutable(p)) {
        return p.toString();
      }
    }
    throw new IllegalStateException("no redis-server found: the Redis tests start their own"
        + " server. Install one (Debian/Ubuntu: apt-get install redis-server; macOS: brew install"
        + " redis) or set ONCE_REDIS_SERVER to its path.");
  }

  /** A port on 127.0.0.1 that nothing listens on now. */
  public static int freePort() {
    return freePort(false);
  }

  private static int freePort(boolean withBusPort) {
    for (int attempt = 0; attempt < 100; attempt++) {
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
        int port = socket.getLocalPort();
        if (!withBusPort) {
          return port;
        }
        if (port + 10_000 < 65_536) {
          try (ServerSocket bus = new ServerSocket(port + 10_000, 1, InetAddress.getByName(HOST))) {
            return port;
          } catch (IOException taken) {
            // try another
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    throw new IllegalStateException("no free port pair for a cluster node");
  }

  @Override
  public String toString() {
    return "redis-server[" + uri() + "]";
  }
}
