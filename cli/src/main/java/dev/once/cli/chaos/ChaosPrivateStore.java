package dev.once.cli.chaos;

import dev.once.cli.support.CommandFailure;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A store server that {@code once chaos} starts itself, so that it may kill it ({@code kill -9})
 * and start it again: {@code --store private:redis} (a {@code redis-server} with
 * {@code --appendonly yes --appendfsync always}) or {@code --store private:postgres} (a PostgreSQL
 * cluster made by the machine's {@code initdb}, {@code fsync} and {@code synchronous_commit} on).
 * Both listen on a free port of 127.0.0.1 only, keep their data in a directory of their own and
 * are killed and deleted by {@link #close()}.
 */
abstract class ChaosPrivateStore implements AutoCloseable {

  static final String PREFIX = "private:";
  static final String HOST = "127.0.0.1";
  private static final long READY_MILLIS = 60_000;

  final Path directory;
  final int port;
  private boolean closed;

  private ChaosPrivateStore(Path directory, int port) {
    this.directory = directory;
    this.port = port;
  }

  /** Whether {@code --store} names a private store. */
  static boolean named(String store) {
    return store != null && store.toLowerCase(Locale.ROOT).startsWith(PREFIX);
  }

  /**
   * Checks a {@code private:} name without starting anything.
   *
   * @throws IllegalArgumentException with a one-line message
   */
  static String kind(String store) {
    String kind = store.substring(PREFIX.length()).toLowerCase(Locale.ROOT);
    if (!kind.equals("redis") && !kind.equals("postgres")) {
      throw new IllegalArgumentException("store '" + store + "' is not a private store this "
          + "command can start (private:redis or private:postgres)");
    }
    return kind;
  }

  /**
   * Starts the private store {@code kind} with its data under {@code runDirectory} (Redis) or a
   * directory of its own (PostgreSQL, whose files belong to the {@code postgres} user when this
   * runs as root).
   *
   * @throws CommandFailure (exit 2) if the binaries are missing or the server does not start
   */
  static ChaosPrivateStore start(String kind, Path runDirectory) {
    return started("private " + kind + " server",
        () -> kind.equals("redis") ? Redis.create(runDirectory) : Postgres.create(),
        ChaosPrivateStore::startServer);
  }

  /** Makes what a run starts; may fail. */
  @FunctionalInterface
  interface Maker<T> {
    T make() throws Exception;
  }

  /** Starts what a {@link Maker} made; may fail. */
  @FunctionalInterface
  interface Starter<T> {
    void start(T made) throws Exception;
  }

  /**
   * Makes and starts the servers of a run ({@code what}, for the message); whatever was made is
   * closed (killed, its data deleted) when it does not start, so no failure leaves one behind.
   *
   * @throws CommandFailure (exit 2) when making or starting fails
   */
  static <T extends AutoCloseable> T started(String what, Maker<T> make, Starter<T> start) {
    T made = null;
    try {
      made = make.make();
      start.start(made);
      return made;
    } catch (Exception e) {
      if (made != null) {
        try {
          made.close();
        } catch (Exception ignored) {
          // best effort: reporting why it did not start matters more
        }
      }
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "interrupted while starting the "
            + what);
      }
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot start the " + what + ": "
          + e.getMessage());
    }
  }

  /** The URI the workers and the audit use. */
  abstract String uri();

  /** What it is, for people. */
  abstract String describe();

  /** Starts the server on its port and waits until it answers. */
  abstract void startServer() throws IOException, InterruptedException;

  /** {@code kill -9} of every process of the server; returns when they are gone. */
  abstract void crash() throws InterruptedException;

  /**
   * Crashes the server, waits {@code downMillis}, and starts it again on the same data. Nothing
   * once {@link #close()}d: a restart and a close (Ctrl-C) never leave a server behind.
   */
  synchronized void restart(long downMillis) throws IOException, InterruptedException {
    if (closed) {
      return;
    }
    crash();
    Thread.sleep(downMillis);
    startServer();
  }

  /** Kills the server and deletes its data; never throws. */
  @Override
  public synchronized void close() {
    closed = true;
    try {
      crash();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      // best effort: the process may be gone already
    }
    deleteData();
  }

  void deleteData() {}

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(true);
      socket.bind(new InetSocketAddress(InetAddress.getByName(HOST), 0));
      return socket.getLocalPort();
    }
  }

  static void killTree(ProcessHandle root) throws InterruptedException {
    List<ProcessHandle> all = new ArrayList<>();
    all.add(root);
    root.descendants().forEach(all::add);
    all.forEach(ProcessHandle::destroyForcibly);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (ProcessHandle p : all) {
      while (p.isAlive() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
    }
  }

  /**
   * The lines a private PostgreSQL server's {@code postgresql.conf} ends with: on {@code port} of
   * loopback only, its socket in {@code socketDirectory}, every commit flushed ({@code fsync},
   * {@code synchronous_commit}); {@code more} after them.
   */
  static List<String> settings(String by, int port, Path socketDirectory, String... more) {
    List<String> lines = new ArrayList<>(List.of("",
        "# " + by + ": a private server on loopback; every commit flushed",
        "port = " + port,
        "listen_addresses = '" + HOST + "'",
        "unix_socket_directories = '" + socketDirectory + "'",
        "fsync = on",
        "synchronous_commit = on",
        "full_page_writes = on",
        "max_connections = 300"));
    lines.addAll(List.of(more));
    lines.add("");
    return lines;
  }

  /**
   * Hands {@code directory} to the {@code postgres} user: as root, PostgreSQL's servers run as
   * that user, who must own their data.
   */
  static void ownedByPostgres(Path directory) throws IOException {
    UserPrincipal owner;
    try {
      owner = directory.getFileSystem().getUserPrincipalLookupService()
          .lookupPrincipalByName("postgres");
    } catch (IOException e) {
      throw new IOException("running as root, the server must run as the postgres user, "
          + "and there is none");
    }
    Files.setOwner(directory, owner);
  }

  /**
   * Runs one of PostgreSQL's tools (as the {@code postgres} user when {@code asPostgresUser}),
   * its output kept for the error.
   *
   * @throws IOException if it fails or does not finish within a minute and a bit
   */
  static void runTool(boolean asPostgresUser, List<String> command, String what)
      throws IOException, InterruptedException {
    List<String> line = new ArrayList<>();
    if (asPostgresUser) {
      line.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    line.addAll(command);
    Path output = Files.createTempFile("once-chaos-pg-", ".out");
    try {
      Process p = new ProcessBuilder(line).redirectErrorStream(true)
          .redirectOutput(output.toFile()).redirectInput(Redirect.from(new java.io.File(
              "/dev/null"))).start();
      if (!p.waitFor(READY_MILLIS + 10_000, TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        throw new IOException(what + " did not finish");
      }
      if (p.exitValue() != 0) {
        String text = Files.readString(output).strip().replaceAll("\\s*\\R\\s*", " ");
        throw new IOException(what + " failed (exit " + p.exitValue() + "): "
            + (text.length() > 300 ? text.substring(0, 300) + "..." : text));
      }
    } finally {
      Files.deleteIfExists(output);
    }
  }

  static void deleteRecursively(Path directory) {
    if (directory == null || !Files.exists(directory)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(directory)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException ignored) {
          // best effort
        }
      });
    } catch (IOException ignored) {
      // best effort
    }
  }

  /** A private {@code redis-server}, AOF with an fsync before every reply. */
  static final class Redis extends ChaosPrivateStore {
    /** The server, as the failover topologies run theirs: a configuration file of its own. */
    private final ChaosFailover.RedisProcess server;
    private String version = "";

    private Redis(Path directory, int port, String binary) throws IOException {
      super(directory, port);
      this.server = new ChaosFailover.RedisProcess(binary, directory, port, false);
      server.configure(List.of("appendonly yes", "appendfsync always", "save \"\""));
    }

    static Redis create(Path runDirectory) throws IOException {
      return new Redis(runDirectory.resolve("redis"), freePort(), findRedisServer());
    }

    static String findRedisServer() throws IOException {
      List<String> candidates = new ArrayList<>();
      String env = System.getenv("ONCE_REDIS_SERVER");
      if (env != null && !env.isBlank()) {
        candidates.add(env);
      }
      candidates.add("/usr/bin/redis-server");
      candidates.add("/usr/local/bin/redis-server");
      candidates.add("/opt/homebrew/bin/redis-server");
      for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
        if (!dir.isEmpty()) {
          candidates.add(dir + "/redis-server");
        }
      }
      for (String c : candidates) {
        if (Files.isExecutable(Path.of(c))) {
          return c;
        }
      }
      throw new IOException("no redis-server binary found (install redis-server, or set "
          + "ONCE_REDIS_SERVER)");
    }

    @Override
    String uri() {
      return "redis://" + HOST + ":" + port;
    }

    @Override
    String describe() {
      return "private redis-server" + version + " on " + HOST + ":" + port
          + " (appendonly yes, appendfsync always; data in " + directory + ")";
    }

    @Override
    void startServer() throws IOException, InterruptedException {
      server.start();
      if (version.isEmpty()) {
        version = server.version();
      }
    }

    @Override
    void crash() {
      server.kill();
    }
  }

  /** A private PostgreSQL cluster from the machine's binaries. */
  static final class Postgres extends ChaosPrivateStore {
    private final Path bin;
    private final Path data;
    private final boolean asPostgresUser;

    private Postgres(Path directory, int port, Path bin, boolean asPostgresUser) {
      super(directory, port);
      this.bin = bin;
      this.data = directory.resolve("data");
      this.asPostgresUser = asPostgresUser;
    }

    static Postgres create() throws IOException, InterruptedException {
      Path bin = findBinaries();
      boolean root = "root".equals(System.getProperty("user.name"));
      // Its own directory: as root, the server runs as the postgres user, who must own it and
      // may not be able to enter the run directory.
      Path directory = Files.createTempDirectory("once-chaos-postgres-");
      Postgres postgres = new Postgres(directory, freePort(), bin, root);
      try {
        if (root) {
          ownedByPostgres(directory);
        }
        postgres.run(List.of(bin.resolve("initdb").toString(), "-D", postgres.data.toString(),
            "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"),
            "initdb");
        Files.writeString(postgres.data.resolve("postgresql.conf"), String.join("\n",
            settings("once chaos", postgres.port, directory)),
            java.nio.file.StandardOpenOption.APPEND);
        return postgres;
      } catch (IOException | InterruptedException | RuntimeException e) {
        postgres.deleteData();
        throw e;
      }
    }

    static Path findBinaries() throws IOException {
      String env = System.getenv("PG_BIN");
      if (env != null && !env.isBlank()) {
        Path bin = Path.of(env);
        if (Files.isExecutable(bin.resolve("initdb")) && Files.isExecutable(bin.resolve("pg_ctl"))) {
          return bin;
        }
        throw new IOException("PG_BIN=" + env + " has no initdb and pg_ctl");
      }
      Path root = Path.of("/usr/lib/postgresql");
      if (Files.isDirectory(root)) {
        try (Stream<Path> versions = Files.list(root)) {
          Path best = versions.map(v -> v.resolve("bin"))
              .filter(b -> Files.isExecutable(b.resolve("initdb"))
                  && Files.isExecutable(b.resolve("pg_ctl")))
              .max(Comparator.comparingInt(Postgres::major)).orElse(null);
          if (best != null) {
            return best;
          }
        }
      }
      throw new IOException("no PostgreSQL binaries (initdb, pg_ctl) under /usr/lib/postgresql; "
          + "install postgresql or set PG_BIN");
    }

    private static int major(Path bin) {
      try {
        return Integer.parseInt(bin.getParent().getFileName().toString());
      } catch (NumberFormatException e) {
        return 0;
      }
    }

    @Override
    String uri() {
      return "postgres://postgres@" + HOST + ":" + port + "/postgres";
    }

    @Override
    String describe() {
      return "private PostgreSQL " + bin.getParent().getFileName() + " on " + HOST + ":" + port
          + " (fsync on, synchronous_commit on; data in " + data + ")";
    }

    @Override
    void startServer() throws IOException, InterruptedException {
      run(List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l",
          directory.resolve("postgres.log").toString(), "-w", "-t", "60", "start"), "pg_ctl start");
    }

    private void run(List<String> command, String what) throws IOException, InterruptedException {
      runTool(asPostgresUser, command, what);
    }

    @Override
    void crash() throws InterruptedException {
      Path pidFile = data.resolve("postmaster.pid");
      long pid;
      try {
        if (!Files.exists(pidFile)) {
          return;
        }
        pid = Long.parseLong(Files.readAllLines(pidFile).get(0).strip());
      } catch (IOException | RuntimeException e) {
        return;
      }
      ProcessHandle postmaster = ProcessHandle.of(pid).orElse(null);
      if (postmaster != null) {
        // The postmaster and every backend at once, as a crash of the server would.
        killTree(postmaster);
      }
    }

    @Override
    void deleteData() {
      deleteRecursively(directory);
    }
  }
}
