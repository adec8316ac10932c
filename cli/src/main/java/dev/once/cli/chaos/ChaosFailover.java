package dev.once.cli.chaos;

import dev.once.cli.support.CommandFailure;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.ProcessBuilder.Redirect;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A replicated store that {@code once chaos --failover} starts itself, so that it may kill its
 * primary ({@code kill -9}) and watch a replica take over, as a production outage does:
 *
 * <ul>
 *   <li>{@code redis-sentinel}: two {@code redis-server}s (AOF, {@code appendfsync always}), a
 *       primary and its replica, and three Sentinels that fail over on their own; the workers
 *       reach the primary through the Sentinels ({@code redis-sentinel://…}). With
 *       {@link Replication#SYNC} the workers write with {@code Durability.replicas(1, …)}.
 *   <li>{@code postgres-standby}: a PostgreSQL primary and a streaming standby (synchronous with
 *       {@link Replication#SYNC}, {@code synchronous_standby_names = '*'}), both {@code fsync} on;
 *       this process plays the failover manager (Patroni's part): it promotes the standby with
 *       {@code pg_ctl promote} once the primary is dead. The workers use a multi-host JDBC URL
 *       with {@code targetServerType=primary}.
 * </ul>
 *
 * <p>{@link #failover} kills the primary, waits until the replica is promoted and takes writes,
 * then brings the old primary back as the new one's replica (Redis: restarted on its own AOF and
 * configuration, as a master, and demoted by the Sentinels; PostgreSQL: a new base backup of the
 * new primary), so that the next failover finds a replica again. With a lag, the replica is
 * paused ({@code SIGSTOP}) before the primary is killed and resumed after, so that what the
 * primary acknowledged meanwhile was never replicated: what an asynchronous setup loses then is
 * what the audit shows. A paused replica still takes bytes into its socket buffer, and on
 * loopback the kernel delivers what a killed primary had sent, so the primary first writes
 * ballast outside the store's records, more than the largest receive and send buffers together
 * ({@link #ballastBytes()}): the replication stream then backs up behind it, and the workers'
 * writes of the lag never leave the primary.
 *
 * <p>Everything listens on 127.0.0.1 only, in directories of its own, and {@link #close()} kills
 * every process and deletes the data.
 */
abstract class ChaosFailover implements AutoCloseable {

  static final String REDIS_SENTINEL = "redis-sentinel";
  static final String POSTGRES_STANDBY = "postgres-standby";
  static final String HOST = ChaosPrivateStore.HOST;
  /**
   * How long a promotion and a rejoin may each take before the run gives up (exit 2); generous:
   * on a loaded machine a Sentinel's demotion of a returning primary and the resync took over a
   * minute.
   */
  static final long PROMOTION_MILLIS = 120_000;
  /** The least ballast, more than this machine's socket buffers hold ({@code tcp_rmem} 32 MB). */
  static final int BALLAST_BYTES = 40 << 20;
  /** The most: Redis drops a replica whose output buffer passes 256 MB. */
  static final int MAX_BALLAST_BYTES = 192 << 20;

  /** Whether an acknowledged write has reached the replica. */
  enum Replication {
    /** Redis: {@code Durability.replicas(1, 1 s)}; PostgreSQL: a synchronous standby. */
    SYNC,
    /** Redis: {@code Durability.plain()}; PostgreSQL: an asynchronous standby. */
    ASYNC;

    static Replication parse(String text) {
      try {
        return valueOf(text.strip().toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException | NullPointerException e) {
        throw new IllegalArgumentException("--replication must be sync or async, was " + text);
      }
    }

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One failover, in epoch millis: the primary killed, the replica promoted and taking writes,
   * the old primary back as a replica in sync.
   */
  record Failover(long killedAt, long promotedAt, long rejoinedAt) {
    long promotionMillis() {
      return promotedAt - killedAt;
    }
  }

  /**
   * Runs failovers in a thread of its own, one at a time, so that a promotion taking seconds
   * does not hold up the kills and freezes of the workers.
   */
  static final class Runner {
    private final ChaosFailover store;
    private final List<Failover> done = new CopyOnWriteArrayList<>();
    private Thread running;
    private volatile Exception failure;

    Runner(ChaosFailover store) {
      this.store = store;
    }

    boolean idle() {
      return running == null || !running.isAlive();
    }

    void begin(long lagMillis, long downMillis) throws Exception {
      check();
      running = new Thread(() -> {
        try {
          done.add(store.failover(lagMillis, downMillis));
        } catch (Exception e) {
          failure = e;
        }
      }, "once-chaos-failover");
      running.setDaemon(true);
      running.start();
    }

    /** The failovers finished so far. */
    List<Failover> failovers() {
      return List.copyOf(done);
    }

    /** Waits for a failover under way; the store has its replica back afterwards. */
    void finish() throws Exception {
      if (running != null) {
        running.join(3 * PROMOTION_MILLIS + 60_000);
        if (running.isAlive()) {
          throw new CommandFailure(CommandFailure.CANNOT_RUN, "a failover is still under way "
              + "after " + (3 * PROMOTION_MILLIS + 60_000) / 1000 + " s");
        }
      }
      check();
    }

    private void check() throws Exception {
      if (failure != null) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "a failover did not complete: "
            + failure.getMessage());
      }
    }
  }

  /**
   * A quarter more than the largest socket receive and send buffers this kernel allows
   * ({@code tcp_rmem}, {@code tcp_wmem}), at least {@value #BALLAST_BYTES} bytes and at most
   * {@value #MAX_BALLAST_BYTES}.
   */
  static int ballastBytes() {
    long buffers = largest(Path.of("/proc/sys/net/ipv4/tcp_rmem"))
        + largest(Path.of("/proc/sys/net/ipv4/tcp_wmem"));
    return (int) Math.min(MAX_BALLAST_BYTES, Math.max(BALLAST_BYTES, buffers * 5 / 4));
  }

  private static long largest(Path setting) {
    try {
      String[] values = Files.readString(setting).trim().split("\\s+");
      return Long.parseLong(values[values.length - 1]);
    } catch (IOException | RuntimeException e) {
      return 0; // not Linux: the least ballast
    }
  }

  /** Checks a {@code --failover} kind; returns it in lower case. */
  static String kind(String text) {
    String kind = text == null ? "" : text.strip().toLowerCase(Locale.ROOT);
    if (!kind.equals(REDIS_SENTINEL) && !kind.equals(POSTGRES_STANDBY)) {
      throw new IllegalArgumentException("--failover must be " + REDIS_SENTINEL + " or "
          + POSTGRES_STANDBY + ", was " + text);
    }
    return kind;
  }

  final Replication replication;

  ChaosFailover(Replication replication) {
    this.replication = replication;
  }

  /**
   * Starts the replicated store {@code kind} with its data under {@code runDirectory} (Redis) or
   * a directory of its own (PostgreSQL).
   *
   * @throws CommandFailure (exit 2) if the binaries are missing or a server does not start
   */
  static ChaosFailover start(String kind, Replication replication, Path runDirectory) {
    return ChaosPrivateStore.started(kind + " servers",
        () -> kind.equals(REDIS_SENTINEL) ? new RedisSentinel(replication, runDirectory)
            : new PostgresStandby(replication),
        ChaosFailover::startAll);
  }

  /** The store URI of the workers and the audit: through the Sentinels, or every host. */
  abstract String uri();

  /** What it is, for people. */
  abstract String describe();

  /** The Redis durability the workers write with ({@code replicas:1:1000}); null for SQL. */
  String durability() {
    return null;
  }

  abstract void startAll() throws IOException, InterruptedException, SQLException;

  /**
   * Kills the primary ({@code lagMillis} after pausing the replica, when above 0), waits until
   * the replica is promoted, keeps the old primary down for {@code downMillis}, then brings it
   * back as the new primary's replica and waits until it is in sync.
   *
   * @throws IOException if the promotion or the rejoin does not happen within
   *                     {@value #PROMOTION_MILLIS} ms
   */
  final Failover failover(long lagMillis, long downMillis)
      throws IOException, InterruptedException {
    choose();
    long killedAt;
    if (lagMillis > 0) {
      pauseReplica(true);
      try {
        ballast();
        Thread.sleep(lagMillis);
        killedAt = System.currentTimeMillis();
        killPrimary();
      } finally {
        pauseReplica(false);
      }
    } else {
      killedAt = System.currentTimeMillis();
      killPrimary();
    }
    awaitPromotion();
    long promotedAt = System.currentTimeMillis();
    Thread.sleep(downMillis);
    rejoin();
    return new Failover(killedAt, promotedAt, System.currentTimeMillis());
  }

  /** Finds the primary of this failover and the replica that is to take over. */
  abstract void choose() throws IOException;

  /** {@code SIGSTOP}s ({@code pause}) or {@code SIGCONT}s every process of the replica. */
  abstract void pauseReplica(boolean pause) throws IOException, InterruptedException;

  /** Writes the ballast on the primary, outside the store's records. */
  abstract void ballast() throws IOException;

  /** {@code kill -9} of the primary, every process of it. */
  abstract void killPrimary();

  /** Waits until the replica is the primary and takes writes. */
  abstract void awaitPromotion() throws IOException, InterruptedException;

  /** Brings the old primary back as the new one's replica, in sync. */
  abstract void rejoin() throws IOException, InterruptedException;

  /** Kills every process and deletes the data; never throws. */
  @Override
  public abstract void close();

  static void signal(long pid, String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
        .redirectErrorStream(true).start();
    if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      kill.destroyForcibly();
      throw new IOException("kill -" + signal + " " + pid + " failed");
    }
  }

  static void await(String what, Check check) throws IOException, InterruptedException {
    long deadline = System.currentTimeMillis() + PROMOTION_MILLIS;
    while (!check.done()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IOException(what + " did not happen within " + PROMOTION_MILLIS / 1000 + " s");
      }
      Thread.sleep(20);
    }
  }

  /** A condition polled by {@link #await}; an exception reads as "not yet". */
  @FunctionalInterface
  interface Check {
    boolean test() throws Exception;

    default boolean done() {
      try {
        return test();
      } catch (Exception e) {
        return false;
      }
    }
  }

  /** A primary, its replica and three Sentinels; the Sentinels fail over by themselves. */
  static final class RedisSentinel extends ChaosFailover {
    static final String MASTER = "once";
    private final Path directory;
    private final RedisProcess[] nodes = new RedisProcess[2];
    private final RedisProcess[] sentinels = new RedisProcess[3];
    private String version = "";

    RedisSentinel(Replication replication, Path runDirectory) throws IOException {
      super(replication);
      this.directory = runDirectory.resolve("redis-sentinel");
      Files.createDirectories(directory);
      String binary = ChaosPrivateStore.Redis.findRedisServer();
      for (int i = 0; i < nodes.length; i++) {
        nodes[i] = new RedisProcess(binary, directory.resolve("node-" + (i + 1)),
            ChaosPrivateStore.freePort(), false);
      }
      for (int i = 0; i < sentinels.length; i++) {
        sentinels[i] = new RedisProcess(binary, directory.resolve("sentinel-" + (i + 1)),
            ChaosPrivateStore.freePort(), true);
      }
    }

    @Override
    void startAll() throws IOException, InterruptedException {
      for (int i = 0; i < nodes.length; i++) {
        List<String> conf = new ArrayList<>(List.of(
            "appendonly yes", "appendfsync always", "save \"\"", "repl-diskless-sync-delay 0"));
        if (i > 0) {
          conf.add("replicaof " + HOST + " " + nodes[0].port);
        }
        nodes[i].configure(conf);
        nodes[i].start();
      }
      version = nodes[0].version();
      await("the replica's first sync", () -> inSync(nodes[1]));
      for (RedisProcess sentinel : sentinels) {
        sentinel.configure(List.of(
            "sentinel monitor " + MASTER + " " + HOST + " " + nodes[0].port + " 2",
            "sentinel down-after-milliseconds " + MASTER + " 1000",
            "sentinel failover-timeout " + MASTER + " 5000",
            "sentinel parallel-syncs " + MASTER + " 1"));
        sentinel.start();
      }
      // Every Sentinel must know the replica and the other Sentinels before the first failover.
      await("the Sentinels' discovery", () -> {
        for (RedisProcess s : sentinels) {
          String info = s.info("sentinel");
          if (!info.contains("slaves=1,sentinels=3")) {
            return false;
          }
        }
        return true;
      });
    }

    @Override
    String uri() {
      StringBuilder uri = new StringBuilder("redis-sentinel://");
      for (int i = 0; i < sentinels.length; i++) {
        uri.append(i == 0 ? "" : ",").append(HOST).append(':').append(sentinels[i].port);
      }
      return uri.append('#').append(MASTER).toString();
    }

    @Override
    String durability() {
      return replication == Replication.SYNC ? "replicas:1:1000" : "plain";
    }

    @Override
    String describe() {
      return "private redis-server" + version + " primary + replica on " + HOST + ":"
          + nodes[0].port + "/" + nodes[1].port + " (appendonly yes, appendfsync always), 3 "
          + "Sentinels (down after 1 s); workers write with " + (replication == Replication.SYNC
          ? "Durability.replicas(1, 1 s)" : "Durability.plain()") + "; data in " + directory;
    }

    /** The node the Sentinels name as the primary. */
    private RedisProcess primary() throws IOException {
      for (RedisProcess s : sentinels) {
        try {
          Object answer = Resp.ask(s.port, "SENTINEL", "get-master-addr-by-name", MASTER);
          if (answer instanceof List<?> address && address.size() == 2) {
            int port = Integer.parseInt(String.valueOf(address.get(1)));
            for (RedisProcess node : nodes) {
              if (node.port == port) {
                return node;
              }
            }
          }
        } catch (IOException | RuntimeException e) {
          // ask the next Sentinel
        }
      }
      throw new IOException("no Sentinel names the primary");
    }

    private RedisProcess old;
    private RedisProcess replica;

    @Override
    void choose() throws IOException {
      old = primary();
      replica = old == nodes[0] ? nodes[1] : nodes[0];
    }

    @Override
    void pauseReplica(boolean pause) throws IOException, InterruptedException {
      signal(replica.pid(), pause ? "STOP" : "CONT");
    }

    @Override
    void ballast() throws IOException {
      Resp.ask(old.port, 60_000, "SET", "once-chaos-ballast", "x".repeat(ballastBytes()));
    }

    @Override
    void killPrimary() {
      old.kill();
    }

    @Override
    void awaitPromotion() throws IOException, InterruptedException {
      await("the promotion of the replica", () -> primary() == replica
          && replica.info("replication").contains("role:master"));
    }

    @Override
    void rejoin() throws IOException, InterruptedException {
      // From its own AOF and configuration: a primary, until the Sentinels demote it.
      old.start();
      await("the old primary's rejoin as a replica", () -> inSync(old));
    }

    private static boolean inSync(RedisProcess node) throws IOException {
      String info = node.info("replication");
      return info.contains("role:slave") && info.contains("master_link_status:up")
          && !info.contains("master_sync_in_progress:1");
    }

    @Override
    public void close() {
      for (RedisProcess p : sentinels) {
        p.kill();
      }
      for (RedisProcess p : nodes) {
        p.kill();
      }
    }
  }

  /** A {@code redis-server} (or Sentinel) with a configuration file of its own. */
  static final class RedisProcess {
    private final String binary;
    private final Path directory;
    final int port;
    private final boolean sentinel;
    private Process process;

    RedisProcess(String binary, Path directory, int port, boolean sentinel) throws IOException {
      this.binary = binary;
      this.directory = directory;
      this.port = port;
      this.sentinel = sentinel;
      Files.createDirectories(directory);
    }

    /** Writes the configuration file (the Sentinels and the servers rewrite it later). */
    void configure(List<String> lines) throws IOException {
      List<String> all = new ArrayList<>(List.of("port " + port, "bind " + HOST,
          "protected-mode yes", "daemonize no", "dir " + directory,
          "logfile " + directory.resolve(sentinel ? "sentinel.log" : "redis.log")));
      all.addAll(lines);
      Files.write(directory.resolve(sentinel ? "sentinel.conf" : "redis.conf"), all);
    }

    void start() throws IOException, InterruptedException {
      List<String> command = new ArrayList<>(List.of(binary,
          directory.resolve(sentinel ? "sentinel.conf" : "redis.conf").toString()));
      if (sentinel) {
        command.add("--sentinel");
      }
      process = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(Redirect.appendTo(directory.resolve("out.log").toFile())).start();
      long deadline = System.currentTimeMillis() + PROMOTION_MILLIS;
      while (true) {
        if (!process.isAlive()) {
          throw new IOException("redis-server on port " + port + " exited with code "
              + process.exitValue() + "; see " + directory);
        }
        try {
          if ("PONG".equals(Resp.ask(port, "PING"))) {
            return;
          }
        } catch (IOException notYet) {
          // not listening yet, or loading its AOF
        }
        if (System.currentTimeMillis() > deadline) {
          throw new IOException("redis-server on port " + port + " did not answer PING within "
              + PROMOTION_MILLIS / 1000 + " s");
        }
        Thread.sleep(20);
      }
    }

    long pid() {
      return process.pid();
    }

    String info(String section) throws IOException {
      return String.valueOf(Resp.ask(port, "INFO", section));
    }

    String version() throws IOException {
      for (String line : info("server").split("\r?\n")) {
        if (line.startsWith("redis_version:")) {
          return " " + line.substring("redis_version:".length()).strip();
        }
      }
      return "";
    }

    /** {@code kill -9}; ends a stopped process too. */
    void kill() {
      if (process != null) {
        process.destroyForcibly();
        try {
          process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** Just enough RESP2 for the harness: one command, one reply. */
  static final class Resp {
    private Resp() {}

    /** The reply: a String, a Long, a List, or an IOException for an error reply. */
    static Object ask(int port, String... args) throws IOException {
      return ask(port, 2_000, args);
    }

    static Object ask(int port, int timeoutMillis, String... args) throws IOException {
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress(HOST, port), 1_000);
        socket.setSoTimeout(timeoutMillis);
        StringBuilder command = new StringBuilder("*").append(args.length).append("\r\n");
        for (String a : args) {
          command.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n")
              .append(a).append("\r\n");
        }
        OutputStream out = socket.getOutputStream();
        out.write(command.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
        return read(new BufferedInputStream(socket.getInputStream()));
      }
    }

    private static Object read(InputStream in) throws IOException {
      String line = line(in);
      switch (line.charAt(0)) {
        case '+':
          return line.substring(1);
        case '-':
          throw new IOException(line.substring(1));
        case ':':
          return Long.parseLong(line.substring(1));
        case '$': {
          int length = Integer.parseInt(line.substring(1));
          if (length < 0) {
            return null;
          }
          byte[] bytes = in.readNBytes(length + 2);
          return new String(bytes, 0, length, StandardCharsets.UTF_8);
        }
        case '*': {
          int count = Integer.parseInt(line.substring(1));
          List<Object> items = new ArrayList<>();
          for (int i = 0; i < count; i++) {
            items.add(read(in));
          }
          return count < 0 ? null : items;
        }
        default:
          throw new IOException("not a RESP reply: " + line);
      }
    }

    private static String line(InputStream in) throws IOException {
      StringBuilder line = new StringBuilder();
      for (int b = in.read(); b != '\n'; b = in.read()) {
        if (b < 0) {
          throw new IOException("connection closed");
        }
        if (b != '\r') {
          line.append((char) b);
        }
      }
      return line.toString();
    }
  }

  /**
   * A PostgreSQL primary and a streaming standby from the machine's binaries; this process
   * promotes the standby when it has killed the primary.
   */
  static final class PostgresStandby extends ChaosFailover {
    private final Path bin;
    private final Path directory;
    private final boolean asPostgresUser;
    private final PgNode[] nodes = new PgNode[2];

    PostgresStandby(Replication replication) throws IOException {
      super(replication);
      this.bin = ChaosPrivateStore.Postgres.findBinaries();
      this.asPostgresUser = "root".equals(System.getProperty("user.name"));
      // Its own directory: as root, the servers run as the postgres user, who must own it.
      this.directory = Files.createTempDirectory("once-chaos-standby-");
      if (asPostgresUser) {
        try {
          ChaosPrivateStore.ownedByPostgres(directory);
        } catch (IOException e) {
          ChaosPrivateStore.deleteRecursively(directory);
          throw e;
        }
      }
      for (int i = 0; i < nodes.length; i++) {
        nodes[i] = new PgNode(directory.resolve("node-" + (i + 1)), ChaosPrivateStore.freePort());
      }
    }

    private final class PgNode {
      final Path data;
      final int port;

      PgNode(Path data, int port) {
        this.data = data;
        this.port = port;
      }

      void settings() throws IOException {
        Files.writeString(data.resolve("postgresql.conf"), String.join("\n",
            ChaosPrivateStore.settings("once chaos --failover", port, directory,
                "wal_level = replica",
                "max_wal_senders = 10",
                "wal_keep_size = '256MB'",
                "hot_standby = on",
                "wal_receiver_status_interval = '1s'",
                // Every node carries it: a promoted standby then waits for its own standby, too.
                "synchronous_standby_names = '" + (replication == Replication.SYNC ? "*" : "")
                    + "'")), StandardOpenOption.APPEND);
      }

      void start() throws IOException, InterruptedException {
        tool(List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l",
            data.resolveSibling(data.getFileName() + ".log").toString(), "-w", "-t", "60",
            "start"), "pg_ctl start");
      }

      /** A new standby of {@code primary}: a base backup of it, with its connection settings. */
      void follow(PgNode primary) throws IOException, InterruptedException {
        ChaosPrivateStore.deleteRecursively(data);
        tool(List.of(bin.resolve("pg_basebackup").toString(), "-h", HOST, "-p",
            Integer.toString(primary.port), "-U", "postgres", "-D", data.toString(), "-R",
            "-X", "stream", "-c", "fast", "--no-sync"), "pg_basebackup");
        settings();
        start();
      }

      long postmaster() {
        try {
          return Long.parseLong(Files.readAllLines(data.resolve("postmaster.pid")).get(0).strip());
        } catch (IOException | RuntimeException e) {
          return -1;
        }
      }

      /** Every process of the server at once, as a crash of its machine would. */
      void kill() {
        long pid = postmaster();
        ProcessHandle.of(pid).ifPresent(p -> {
          try {
            ChaosPrivateStore.killTree(p);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }

      void signalAll(String signal) throws IOException, InterruptedException {
        ProcessHandle p = ProcessHandle.of(postmaster()).orElse(null);
        if (p == null) {
          return;
        }
        for (ProcessHandle child : p.children().toList()) {
          try {
            signal(child.pid(), signal);
          } catch (IOException e) {
            if (child.isAlive()) {
              throw e;
            } // a backend that ended meanwhile: nothing to signal
          }
        }
        signal(p.pid(), signal);
      }

      Connection connect() throws SQLException {
        return connect(5);
      }

      Connection connect(int socketTimeoutSeconds) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", "postgres");
        props.setProperty("connectTimeout", "2");
        props.setProperty("socketTimeout", Integer.toString(socketTimeoutSeconds));
        return DriverManager.getConnection("jdbc:postgresql://" + HOST + ":" + port
            + "/postgres", props);
      }

      /**
       * Rows of random text (not compressed: each under TOAST's threshold), in a table outside
       * the store's, committed without waiting for the paused standby.
       */
      void ballast() throws SQLException {
        try (Connection c = connect(60); Statement s = c.createStatement()) {
          s.execute("SET synchronous_commit TO local");
          s.execute("DROP TABLE IF EXISTS once_chaos_ballast");
          s.execute("CREATE TABLE once_chaos_ballast AS SELECT (SELECT string_agg(md5(random()"
              + "::text || g::text || i::text), '') FROM generate_series(1, 32) AS i) AS b "
              + "FROM generate_series(1, " + (ballastBytes() / 1024) + ") AS g");
        }
      }

      boolean primary() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery()")) {
          rs.next();
          return !rs.getBoolean(1);
        }
      }

      /** Whether {@code standby} streams from this primary (and is its synchronous one). */
      boolean streamsTo(int standbyPort) throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT state, sync_state FROM pg_stat_replication")) {
          while (rs.next()) {
            if ("streaming".equals(rs.getString(1)) && (replication == Replication.ASYNC
                || "sync".equals(rs.getString(2)))) {
              return true;
            }
          }
          return false;
        }
      }
    }

    @Override
    void startAll() throws IOException, InterruptedException, SQLException {
      tool(List.of(bin.resolve("initdb").toString(), "-D", nodes[0].data.toString(), "-U",
          "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"), "initdb");
      nodes[0].settings();
      nodes[0].start();
      nodes[1].follow(nodes[0]);
      await("the standby's first sync", () -> nodes[0].streamsTo(nodes[1].port));
    }

    @Override
    String uri() {
      return "jdbc:postgresql://" + HOST + ":" + nodes[0].port + "," + HOST + ":" + nodes[1].port
          + "/postgres?user=postgres&targetServerType=primary&connectTimeout=5&loginTimeout=10";
    }

    @Override
    String describe() {
      return "private PostgreSQL " + bin.getParent().getFileName() + " primary + "
          + (replication == Replication.SYNC ? "synchronous" : "asynchronous") + " streaming "
          + "standby on " + HOST + ":" + nodes[0].port + "/" + nodes[1].port + " (fsync on, "
          + "synchronous_commit on); failed over by this process (pg_ctl promote); data in "
          + directory;
    }

    private PgNode current() throws IOException {
      for (PgNode node : nodes) {
        try {
          if (node.primary()) {
            return node;
          }
        } catch (SQLException e) {
          // down: the other one
        }
      }
      throw new IOException("neither PostgreSQL server is a primary");
    }

    private PgNode old;
    private PgNode standby;

    @Override
    void choose() throws IOException {
      old = current();
      standby = old == nodes[0] ? nodes[1] : nodes[0];
    }

    @Override
    void pauseReplica(boolean pause) throws IOException, InterruptedException {
      standby.signalAll(pause ? "STOP" : "CONT");
    }

    @Override
    void ballast() throws IOException {
      try {
        old.ballast();
      } catch (SQLException e) {
        throw new IOException("the ballast before the lag failed: " + e.getMessage(), e);
      }
    }

    @Override
    void killPrimary() {
      old.kill();
    }

    @Override
    void awaitPromotion() throws IOException, InterruptedException {
      tool(List.of(bin.resolve("pg_ctl").toString(), "-D", standby.data.toString(), "-w", "-t",
          "60", "promote"), "pg_ctl promote");
      await("the promotion of the standby", standby::primary);
    }

    @Override
    void rejoin() throws IOException, InterruptedException {
      old.follow(standby);
      await("the old primary's rejoin as a standby", () -> standby.streamsTo(old.port));
    }

    private void tool(List<String> command, String what) throws IOException, InterruptedException {
      ChaosPrivateStore.runTool(asPostgresUser, command, what);
    }

    @Override
    public void close() {
      for (PgNode node : nodes) {
        try {
          node.signalAll("CONT");
        } catch (IOException | InterruptedException | RuntimeException e) {
          // best effort: killed next
        }
        node.kill();
      }
      ChaosPrivateStore.deleteRecursively(directory);
    }
  }
}
