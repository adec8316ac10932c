package dev.once.cli;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreOption;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.cli.support.Json;
import dev.once.cli.support.Latencies;
import dev.once.cli.support.Progress;
import dev.once.jdbc.JdbcStore;
import dev.once.jdbc.TransactionalOnce;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once bench}: throughput and latency of Once against the store's raw primitives through the
 * same client ({@link Baseline}), side by side in one run, for two workloads: new keys (claim, run,
 * complete) and replays of completed keys. Rounds alternate the order of the two sides, so that
 * drift on a shared machine (a neighbour's load, a cache warming up) falls on both.
 *
 * <p>On a SQL store it works in two scratch tables of its own, {@value #ONCE_TABLE} and
 * {@value #RAW_TABLE}, dropped at the end: the store's records are never touched.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    sortOptions = false, showDefaultValues = true,
    header = "Measures Once against the store's raw primitives, side by side.",
    description = {
        "Runs two workloads on the store, each with Once and with the raw primitives the "
            + "hand-written idempotency checks use (insert-if-absent + update; read by key), through the same "
            + "client and pool, in alternating rounds.",
        "Reports operations per second, p50 and p99 latency, and the ratio Once / raw.",
        "SQL stores: works in scratch tables " + BenchCommand.ONCE_TABLE + " and "
            + BenchCommand.RAW_TABLE + " (and " + BenchCommand.ACCOUNTS_TABLE
            + " with --business-write), dropped at the end.",
        "Exit code 0 on success; 2 for bad options or a store that cannot be used."})
final class BenchCommand implements java.util.concurrent.Callable<Integer> {

  static final String ONCE_TABLE = "once_bench";
  static final String RAW_TABLE = "once_bench_raw";
  static final String ACCOUNTS_TABLE = "once_bench_accounts";
  static final int MAX_THREADS = 256;
  /** Keys completed before the replay workload, read at random. */
  static final int REPLAY_KEYS = 1_000;

  private static final byte[] PAYLOAD =
      "{\"amount\":1000,\"currency\":\"EUR\",\"customer\":\"cus_42\"}"
          .getBytes(StandardCharsets.UTF_8);
  private static final String RESPONSE = "{\"id\":\"ch_1\"}";
  private static final byte[] RESPONSE_BYTES = RESPONSE.getBytes(StandardCharsets.UTF_8);

  @Spec
  CommandSpec spec;

  @Mixin
  StoreOption store;

  @Option(names = "--threads", defaultValue = "4", paramLabel = "N[,N...]", split = ",",
      description = "Concurrent callers (1-" + MAX_THREADS + "); several, e.g. 8,64, run the "
          + "whole comparison once for each, one after the other.")
  int[] threadCounts;

  /** The callers of the comparison in progress: one of {@link #threadCounts}. */
  int threads;

  /** What is read of the server around each side (see {@link ServerCounters}). */
  private ServerCounters counters = ServerCounters.NONE;

  @Option(names = "--duration", defaultValue = "3s", paramLabel = "TIME",
      description = "Measured time per side, workload and round, e.g. 3s or 500ms.")
  String duration;

  @Option(names = "--warmup", defaultValue = "1s", paramLabel = "TIME",
      description = "Unmeasured time before each measurement.")
  String warmup;

  @Option(names = "--rounds", defaultValue = "2", paramLabel = "N",
      description = "Rounds per workload (1-20); each alternates which side goes first.")
  int rounds;

  @Option(names = "--virtual-threads", paramLabel = "N", defaultValue = "0", description = {
      "Instead of the comparison with the raw primitives: Once.call on new keys by N callers on "
          + "virtual threads (JDK 21+), by N platform threads and by --threads platform threads, "
          + "side by side over one connection pool of --threads + 2 connections; ops/s, p50, "
          + "p99 and this JVM's CPU per operation. 0 (default): not run."})
  int virtualThreads;

  @Option(names = "--work", paramLabel = "TIME", defaultValue = "0ms", description = {
      "With --virtual-threads: the work sleeps this long inside each call (a downstream call), "
          + "e.g. 5ms."})
  String work;

  @Option(names = "--json", description = "Print the results as one JSON object.")
  boolean json;

  @Option(names = "--coalesce", paramLabel = "N", description = {
      "Also measure Once built with Once.Builder.coalesceStoreCalls(N): up to N callers call the "
          + "store alone, more share claimAll/completeAll batches. Adds the side 'coalesced' to "
          + "new keys and replays; N = 0 adds 'alone' instead (coalescing off), to set against "
          + "the side 'once', built as by default. Not given: neither."})
  Integer coalesce;

  @Option(names = "--business-write", description = {
      "SQL stores: every new key also debits an account row, as a payment would. The raw side "
          + "and lease mode run the debit as an autocommit statement of its own (a third "
          + "commit); transactional mode runs it inside its transaction (one commit for claim, "
          + "debit and outcome). Checks at the end that every debit committed exactly once."})
  boolean businessWrite;

  /** Names this comparison's keys: each comparison of a run (one per thread count) its own. */
  private String run = newRunId();
  private List<Measurement> lastResults;

  /**
   * One side of one workload, summed over the rounds. The costs are over every operation of the
   * side, its warm-ups included ({@code allOperations}), since CPU and WAL are read around the
   * whole side: this JVM's CPU, the server's (-1: not readable from here) and the WAL written (-1:
   * none to read).
   */
  record Measurement(String workload, String variant, String operation, long operations,
      long nanos, Latencies.Summary latency, long allOperations, long jvmCpuNanos,
      long serverCpuNanos, long walBytes) {

    double opsPerSecond() {
      return nanos == 0 ? 0 : operations * 1e9 / nanos;
    }

    /** This JVM's CPU microseconds per operation. */
    double jvmCpuMicros() {
      return perOperation(jvmCpuNanos) / 1e3;
    }

    /** The server's CPU microseconds per operation, or -1 when not read. */
    double serverCpuMicros() {
      return serverCpuNanos < 0 ? -1 : perOperation(serverCpuNanos) / 1e3;
    }

    /** WAL bytes per operation, or -1 when not read. */
    double walBytesPerOperation() {
      return walBytes < 0 ? -1 : perOperation(walBytes);
    }

    private double perOperation(long total) {
      return allOperations == 0 ? 0 : (double) total / allOperations;
    }
  }

  @Override
  public Integer call() throws InterruptedException {
    StoreUri uri = store.uri();
    Duration measure = parseDuration("--duration", duration);
    Duration warm = parseDuration("--warmup", warmup);
    for (int count : threadCounts) {
      if (count < 1 || count > MAX_THREADS) {
        throw invalid("--threads must be between 1 and " + MAX_THREADS + ", was " + count);
      }
      if (coalesce != null && (coalesce < 0 || coalesce > count)) {
        throw invalid("--coalesce must be between 0 (off) and --threads (" + count + "), was "
            + coalesce);
      }
    }
    if (rounds < 1 || rounds > 20) {
      throw invalid("--rounds must be between 1 and 20, was " + rounds);
    }
    if (businessWrite && uri.kind().dialect() == null) {
      throw invalid("--business-write needs a SQL store (sqlite:, postgres:, mariadb:), not "
          + uri.display());
    }
    PrintWriter out = spec.commandLine().getOut();
    threads = threadCounts[0];
    if (virtualThreads != 0) {
      if (threadCounts.length > 1) {
        throw invalid("--virtual-threads takes one --threads count (the pool's), not "
            + threadCounts.length);
      }
      return virtualThreads(uri, measure, warm, out);
    }
    List<Measurement> all = new ArrayList<>();
    for (int count : threadCounts) {
      threads = count;
      compareAt(uri, measure, warm, out);
      all.addAll(lastResults);
      if (!json && count != threadCounts[threadCounts.length - 1]) {
        out.println();
      }
    }
    lastResults = all;
    return 0;
  }

  private static String newRunId() {
    return Long.toString(ThreadLocalRandom.current().nextLong(1L << 40), 36);
  }

  /** The whole comparison with {@link #threads} callers, printed; its results in lastResults. */
  private void compareAt(StoreUri uri, Duration measure, Duration warm, PrintWriter out)
      throws InterruptedException {
    run = newRunId();
    try (OpenStore opened = StoreUris.open(uri, threads + 2, ONCE_TABLE);
         ServerCounters serverCounters = serverCounters(opened)) {
      counters = serverCounters;
      try (Baseline baseline = baseline(opened)) {
        dropOnceTable(opened);
        opened.createSchema();
        Accounts accounts = businessWrite ? new Accounts(opened.dataSource(), threads) : null;
        Once once = Once.builder(opened.store()).build();
        Once coalesced = coalesce != null
            ? once.toBuilder().coalesceStoreCalls(coalesce).build() : null;
        if (!json) {
          out.printf(Locale.ROOT, "once bench: %s, %d threads, %s measured per side, workload "
                  + "and round after %s warm-up, %d round%s%s%n%n", opened.describe(), threads,
              measure.toMillis() + " ms", warm.toMillis() + " ms", rounds, rounds == 1 ? "" : "s",
              accounts == null ? "" : ", a business write (debit) in every new key");
          out.flush();
        }
        List<Measurement> results = new ArrayList<>();
        long total = (long) ((opened.store() instanceof JdbcStore ? 5 : 4)
            + (coalesce != null ? 2 : 0))
            * rounds;
        AtomicLong done = new AtomicLong();
        // Key numbers never repeat across threads, rounds and warm-ups (a counter per thread would
        // restart with every measurement).
        AtomicLong keys = new AtomicLong();
        try (Progress progress = Progress.start("bench", total, done::get)) {
          // New keys: every operation a key never seen before, on both sides.
          results.addAll(compare("new keys", measure, warm, done,
              concat(new Side("raw", baseline.describeNewKey()
                  + (accounts == null ? "" : " + debit"), t -> {
                String prefix = "raw-" + run + "-" + t + "-";
                Baseline.BusinessWrite debit = accounts == null ? null : c -> accounts.debit(c, t);
                return counted(accounts, () -> baseline.newKey(prefix + keys.getAndIncrement(),
                    Fingerprint.of(PAYLOAD).digest(), RESPONSE_BYTES, debit));
              }), newKeySides(opened, once, coalesced, keys, accounts))));
          if (accounts != null) {
            accounts.check();
          }
          // Replays: completed keys read at random, on both sides.
          for (int i = 0; i < REPLAY_KEYS; i++) {
            baseline.newKey("replay-" + run + "-" + i, Fingerprint.of(PAYLOAD).digest(),
                RESPONSE_BYTES);
            once.call(IdempotencyKey.of("bench", "replay-" + run + "-" + i),
                Fingerprint.of(PAYLOAD), Codecs.utf8(), attempt -> RESPONSE);
          }
          List<Side> replaySides = new ArrayList<>(List.of(
              new Side("raw", baseline.describeReplay(), t -> () -> baseline.replay(
                  "replay-" + run + "-" + ThreadLocalRandom.current().nextInt(REPLAY_KEYS))),
              replaySide("once", "Once.call: replay of the stored outcome" + asBuilt(opened),
                  once)));
          if (coalesced != null) {
            replaySides.add(replaySide(coalescedName(), coalescedDescription() + ": replay",
                coalesced));
          }
          results.addAll(compare("replays", measure, warm, done,
              replaySides.toArray(Side[]::new)));
        } finally {
          dropOnceTable(opened);
          if (accounts != null) {
            accounts.drop();
          }
        }
        lastResults = results;
        print(out, opened, results, measure, warm);
      } catch (StoreUnavailableException | IllegalStateException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "the store at " + uri.display()
            + " failed: " + StoreUris.causeMessage(e));
      } finally {
        counters = ServerCounters.NONE;
      }
    }
  }

  /** What can be read of {@code opened}'s server from here. */
  private static ServerCounters serverCounters(OpenStore opened) {
    StoreUri uri = opened.uri();
    return switch (uri.kind()) {
      case POSTGRESQL -> ServerCounters.postgres(opened.dataSource(), jdbcHost(uri.jdbcUrl()));
      case REDIS -> ServerCounters.redis(uri.service().host());
      default -> ServerCounters.NONE;
    };
  }

  /** The host of a {@code jdbc:postgresql://host[:port]/db} URL, or "" when it names none. */
  static String jdbcHost(String jdbcUrl) {
    if (jdbcUrl == null) {
      return "";
    }
    java.util.regex.Matcher m = java.util.regex.Pattern
        .compile("^jdbc:[a-z]+://(\\[[^\\]]*\\]|[^:/?,]*)").matcher(jdbcUrl);
    return m.find() ? m.group(1) : "";
  }

  /** {@code --virtual-threads N}: see {@link VirtualThreadsBench}. */
  private int virtualThreads(StoreUri uri, Duration measure, Duration warm, PrintWriter out)
      throws InterruptedException {
    if (virtualThreads < 1 || virtualThreads > 10_000) {
      throw invalid("--virtual-threads must be between 1 and 10000, was " + virtualThreads);
    }
    if (json || coalesce != null || businessWrite) {
      throw invalid("--virtual-threads does not take --json, --coalesce or --business-write");
    }
    Duration sleep = parseDuration("--work", work);
    java.util.concurrent.ThreadFactory virtual = VirtualThreadsBench.virtualThreads();
    if (virtual == null) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "--virtual-threads needs a JDK 21 or "
          + "newer; this is " + Runtime.version() + " (run with JAVA_HOME set to one)");
    }
    try (OpenStore opened = StoreUris.open(uri, threads + 2, ONCE_TABLE)) {
      dropOnceTable(opened);
      opened.createSchema();
      try {
        Once once = Once.builder(opened.store()).build();
        out.printf(Locale.ROOT, "once bench --virtual-threads: %s, Java %s, %d callers, a pool "
                + "of %d connections, work %s, %s measured per side and round after %s "
                + "warm-up, %d round%s%n%n", opened.describe(), Runtime.version(), virtualThreads,
            threads + 2, sleep.toMillis() + " ms", measure.toMillis() + " ms",
            warm.toMillis() + " ms", rounds, rounds == 1 ? "" : "s");
        out.flush();
        List<VirtualThreadsBench.Side> sides = List.of(
            new VirtualThreadsBench.Side("virtual threads", virtualThreads, virtual),
            new VirtualThreadsBench.Side("platform threads", virtualThreads,
                VirtualThreadsBench.platformThreads("once-bench-platform-")),
            new VirtualThreadsBench.Side("platform pool", threads,
                VirtualThreadsBench.platformThreads("once-bench-pool-")));
        AtomicLong done = new AtomicLong();
        List<VirtualThreadsBench.Result> results;
        try (Progress progress = Progress.start("bench", (long) sides.size() * rounds,
            done::get)) {
          results = new VirtualThreadsBench(once, measure, warm, sleep, run)
              .compare(sides, rounds, done::incrementAndGet);
        }
        VirtualThreadsBench.print(out, results);
        return 0;
      } finally {
        dropOnceTable(opened);
      }
    } catch (StoreUnavailableException | IllegalStateException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "the store at " + uri.display()
          + " failed: " + StoreUris.causeMessage(e));
    }
  }

  private Side newKeySide(String name, String description, Once on, AtomicLong keys,
      Accounts accounts) {
    return new Side(name, description, t -> {
      String prefix = name + "-" + run + "-" + t + "-";
      return counted(accounts, () -> on.call(
          IdempotencyKey.of("bench", prefix + keys.getAndIncrement()), Fingerprint.of(PAYLOAD),
          Codecs.utf8(), attempt -> {
            if (accounts != null) {
              accounts.debit(t);
            }
            return RESPONSE;
          }));
    });
  }

  /**
   * How the side "once", built as by default, coalesces: as its store suggests
   * ({@code IdempotencyStore.defaultCoalescing}), known once the schema is made.
   */
  private static String asBuilt(OpenStore opened) {
    int suggested = opened.store().defaultCoalescing();
    return suggested > 0 ? ", as by default: coalesced beyond " + suggested + " callers"
        : suggested == 0 ? ", as by default: every call alone" : ", as by default";
  }

  /** The side of {@code --coalesce N}. */
  private String coalescedName() {
    return coalesce == 0 ? "alone" : "coalesced";
  }

  private String coalescedDescription() {
    return coalesce == 0 ? "Once.call, coalesceStoreCalls(0): every call alone"
        : "Once.call, coalesceStoreCalls(" + coalesce + ")";
  }

  private Side replaySide(String name, String description, Once on) {
    return new Side(name, description, t -> () -> on.call(
        IdempotencyKey.of("bench", "replay-" + run + "-"
            + ThreadLocalRandom.current().nextInt(REPLAY_KEYS)),
        Fingerprint.of(PAYLOAD), Codecs.utf8(), attempt -> {
          throw new IllegalStateException("a replay must not run the logic");
        }));
  }

  /**
   * The sides of the new-keys workload: raw, Once in lease mode, and on a SQL store
   * TransactionalOnce (claim and completion in one transaction, one commit).
   */
  private Side[] newKeySides(OpenStore opened, Once once, Once coalesced, AtomicLong keys,
      Accounts accounts) {
    List<Side> sides = new ArrayList<>();
    String debit = accounts == null ? "" : " (debit in autocommit)";
    sides.add(newKeySide("once", "Once.call: claim + run + complete" + debit + asBuilt(opened),
        once, keys, accounts));
    if (coalesced != null) {
      sides.add(newKeySide(coalescedName(), coalescedDescription() + ": claim + run + complete"
          + debit, coalesced, keys, accounts));
    }
    if (opened.store() instanceof JdbcStore jdbc) {
      TransactionalOnce tx = TransactionalOnce.builder(jdbc).build();
      sides.add(new Side("tx", "TransactionalOnce: one transaction"
          + (accounts == null ? "" : " (debit inside)"), t -> {
        String prefix = "tx-" + run + "-" + t + "-";
        return counted(accounts, () -> tx.execute(
            IdempotencyKey.of("bench", prefix + keys.getAndIncrement()), Fingerprint.of(PAYLOAD),
            Codecs.utf8(), transaction -> {
              if (accounts != null) {
                accounts.debit(transaction.connection(), t);
              }
              return RESPONSE;
            }));
      }));
    }
    return sides.toArray(Side[]::new);
  }

  /**
   * {@value #ACCOUNTS_TABLE}: one account row per thread, so that threads never wait for each
   * other's row locks and the sides differ only in what Once does; debited once per new key.
   * {@link #check} compares the total debited with the operations that returned: every debit
   * committed exactly once.
   */
  private static final class Accounts {
    private final DataSource pool;
    private final AtomicLong returned = new AtomicLong();

    Accounts(DataSource pool, int threads) {
      this.pool = pool;
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + ACCOUNTS_TABLE);
        s.execute("CREATE TABLE " + ACCOUNTS_TABLE
            + " (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)");
        for (int t = 0; t < threads; t++) {
          s.execute("INSERT INTO " + ACCOUNTS_TABLE + " (id, balance) VALUES (" + t + ", 0)");
        }
      } catch (SQLException e) {
        throw new IllegalStateException("cannot create " + ACCOUNTS_TABLE + ": " + e.getMessage(),
            e);
      }
    }

    /** Debits {@code account} on {@code c}, in whatever transaction {@code c} is in. */
    void debit(Connection c, int account) {
      try (PreparedStatement debit = c.prepareStatement(
          "UPDATE " + ACCOUNTS_TABLE + " SET balance = balance - 1 WHERE id = ?")) {
        debit.setInt(1, account);
        if (debit.executeUpdate() != 1) {
          throw new IllegalStateException("no account " + account);
        }
      } catch (SQLException e) {
        throw new IllegalStateException("debit failed: " + e.getMessage(), e);
      }
    }

    /** Debits {@code account} in an autocommit statement of its own. */
    void debit(int account) {
      try (Connection c = pool.getConnection()) {
        debit(c, account);
      } catch (SQLException e) {
        throw new IllegalStateException("debit failed: " + e.getMessage(), e);
      }
    }

    /** An operation that debited returned. */
    void done() {
      returned.incrementAndGet();
    }

    void check() {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement();
           ResultSet rs = s.executeQuery("SELECT -SUM(balance) FROM " + ACCOUNTS_TABLE)) {
        rs.next();
        long debited = rs.getLong(1);
        if (debited != returned.get()) {
          throw new IllegalStateException(debited + " debits committed for " + returned.get()
              + " operations");
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }

    void drop() {
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + ACCOUNTS_TABLE);
      } catch (SQLException e) {
        // Scratch data; the next run drops it first.
      }
    }
  }

  /** {@code operation}, counted by {@code accounts} when it returns (as is without accounts). */
  private static Runnable counted(Accounts accounts, Runnable operation) {
    if (accounts == null) {
      return operation;
    }
    return () -> {
      operation.run();
      accounts.done();
    };
  }

  private static Side[] concat(Side first, Side[] rest) {
    Side[] all = new Side[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }

  /** The last run's measurements, for tests. */
  List<Measurement> lastResults() {
    return lastResults;
  }

  private Baseline baseline(OpenStore opened) {
    StoreUri uri = opened.uri();
    return switch (uri.kind()) {
      case MEMORY -> new Baseline.InMemory();
      case REDIS, REDIS_CLUSTER -> new Baseline.Redis(uri.service().host(),
          uri.kind() == StoreUris.Kind.REDIS_CLUSTER);
      case DYNAMODB -> throw new ParameterException(spec.commandLine(),
          "bench does not support DynamoDB yet (it supports sqlite:, memory:, postgres:, "
              + "mariadb:, redis: and redis-cluster: stores)");
      default -> new Baseline.Sql(opened.dataSource(), uri.kind().dialect(), RAW_TABLE);
    };
  }

  private static void dropOnceTable(OpenStore opened) {
    if (opened.dataSource() == null) {
      return;
    }
    try (Connection c = opened.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + ONCE_TABLE);
    } catch (SQLException e) {
      throw new IllegalStateException(e.getMessage(), e);
    }
  }

  /** One side of a comparison: per thread, an operation to repeat. */
  private record Side(String variant, String operation, IntFunction<Runnable> perThread) {}

  private List<Measurement> compare(String workload, Duration measure, Duration warm,
      AtomicLong done, Side... sides) throws InterruptedException {
    int n = sides.length;
    Latencies[] latencies = new Latencies[n];
    for (int i = 0; i < n; i++) {
      latencies[i] = new Latencies();
    }
    long[][] totals = new long[n][6];
    for (int round = 0; round < rounds; round++) {
      // Forward, then backward: the side that went last goes first in the next round.
      for (int k = 0; k < n; k++) {
        int side = round % 2 == 0 ? k : n - 1 - k;
        long[] result = measure(sides[side], measure, warm, latencies[side]);
        for (int f = 0; f < result.length; f++) {
          // A counter not read (-1) stays -1.
          totals[side][f] = totals[side][f] < 0 || result[f] < 0 ? -1
              : totals[side][f] + result[f];
        }
        done.incrementAndGet();
      }
    }
    List<Measurement> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      long[] t = totals[i];
      out.add(new Measurement(workload, sides[i].variant(), sides[i].operation(), t[0], t[1],
          latencies[i].summary(), t[2], t[3], t[4], t[5]));
    }
    return out;
  }

  /**
   * {threads} threads repeating the side's operation: warm-up, then measured; {ops, nanos, all
   * ops, JVM CPU nanos, server CPU nanos, WAL bytes}, the last three read around the whole side.
   */
  private long[] measure(Side side, Duration measure, Duration warm, Latencies latencies)
      throws InterruptedException {
    CountDownLatch ready = new CountDownLatch(threads);
    AtomicLong operations = new AtomicLong();
    AtomicLong allOperations = new AtomicLong();
    long jvmCpu = ServerCounters.jvmCpuNanos();
    long serverCpu = counters.cpuNanos();
    long wal = counters.walBytes();
    AtomicReference<RuntimeException> failure = new AtomicReference<>();
    long warmNanos = warm.toNanos();
    long measureNanos = measure.toNanos();
    long[] window = new long[2];
    List<Thread> workers = new ArrayList<>();
    long start = System.nanoTime() + 20_000_000L; // every thread started by then
    window[0] = start + warmNanos;
    window[1] = window[0] + measureNanos;
    for (int t = 0; t < threads; t++) {
      Runnable operation = side.perThread().apply(t);
      Thread worker = new Thread(() -> {
        ready.countDown();
        long count = 0;
        long all = 0;
        try {
          while (true) {
            long before = System.nanoTime();
            if (before - window[1] >= 0) {
              break;
            }
            operation.run();
            all++;
            long after = System.nanoTime();
            if (before - window[0] >= 0 && after - window[1] < 0) {
              latencies.record(after - before);
              count++;
            }
          }
        } catch (RuntimeException e) {
          failure.compareAndSet(null, e);
        }
        operations.addAndGet(count);
        allOperations.addAndGet(all);
      }, "once-bench-" + t);
      worker.setDaemon(true);
      workers.add(worker);
      worker.start();
    }
    ready.await();
    for (Thread worker : workers) {
      worker.join();
    }
    if (failure.get() != null) {
      throw failure.get();
    }
    return new long[] {operations.get(), measureNanos, allOperations.get(),
        difference(jvmCpu, ServerCounters.jvmCpuNanos()),
        difference(serverCpu, counters.cpuNanos()), difference(wal, counters.walBytes())};
  }

  private static long difference(long before, long after) {
    return before < 0 || after < 0 ? -1 : after - before;
  }

  private void print(PrintWriter out, OpenStore opened, List<Measurement> results,
      Duration measure, Duration warm) {
    if (json) {
      List<Object> rows = new ArrayList<>();
      for (Measurement m : results) {
        Json.Obj row = Json.obj().put("workload", m.workload()).put("variant", m.variant())
            .put("operation", m.operation()).put("operations", m.operations())
            .put("opsPerSecond", m.opsPerSecond())
            .put("p50Micros", m.latency().percentile(50) / 1e3)
            .put("p99Micros", m.latency().percentile(99) / 1e3)
            .put("jvmCpuMicrosPerOp", m.jvmCpuMicros());
        if (m.serverCpuMicros() >= 0) {
          row.put("serverCpuMicrosPerOp", m.serverCpuMicros());
        }
        if (m.walBytesPerOperation() >= 0) {
          row.put("walBytesPerOp", m.walBytesPerOperation());
        }
        rows.add(row);
      }
      Json.Obj ratios = Json.obj();
      for (Measurement m : results) {
        if (!m.variant().equals("raw")) {
          ratios.put(m.workload() + (m.variant().equals("once") ? "" : " (" + m.variant() + ")"),
              ratio(m, raw(results, m.workload())));
        }
      }
      out.println(Json.obj().put("store", opened.uri().display()).put("threads", threads)
          .put("businessWrite", businessWrite)
          .put("measureMillis", measure.toMillis()).put("warmupMillis", warm.toMillis())
          .put("rounds", rounds).put("results", rows).put("onceOverRaw", ratios));
      out.flush();
      return;
    }
    int width = Math.max(42, results.stream().mapToInt(m -> m.operation().length()).max()
        .orElse(0));
    String format = "%-9s %-9s %-" + width + "s %11s %9s %9s %8s %15s %9s%n";
    out.printf(Locale.ROOT, format, "workload", "side", "one operation", "ops/s", "p50 ms",
        "p99 ms", "vs raw", "CPU µs/op", "WAL B/op");
    out.printf(Locale.ROOT, format, "-".repeat(9), "-".repeat(9), "-".repeat(width),
        "-".repeat(11), "-".repeat(9), "-".repeat(9), "-".repeat(8), "-".repeat(15),
        "-".repeat(9));
    for (int i = 0; i < results.size(); i++) {
      Measurement m = results.get(i);
      String versus = m.variant().equals("raw") ? ""
          : String.format(Locale.ROOT, "%.2fx", ratio(m, raw(results, m.workload())));
      String cpu = m.serverCpuMicros() < 0
          ? String.format(Locale.ROOT, "%.0f", m.jvmCpuMicros())
          : String.format(Locale.ROOT, "%.0f (%.0f+%.0f)", m.jvmCpuMicros() + m.serverCpuMicros(),
              m.jvmCpuMicros(), m.serverCpuMicros());
      out.printf(Locale.ROOT, format, m.workload(), m.variant(), m.operation(),
          String.format(Locale.ROOT, "%.0f", m.opsPerSecond()),
          String.format(Locale.ROOT, "%.3f", m.latency().percentile(50) / 1e6),
          String.format(Locale.ROOT, "%.3f", m.latency().percentile(99) / 1e6), versus, cpu,
          m.walBytesPerOperation() < 0 ? "" : String.format(Locale.ROOT, "%.0f",
              m.walBytesPerOperation()));
    }
    out.printf(Locale.ROOT, "%n\"vs raw\" is Once's throughput over the raw primitives'; Once adds "
        + "fencing tokens, leases, fingerprint checks and stored outcomes.%n");
    out.printf(Locale.ROOT, "\"CPU µs/op\" is CPU time per operation, warm-ups included: %s."
        + "%s%n", counters.cpuSource() == null
            ? "this JVM's (the server's cannot be read from here)"
            : "total (this JVM + the server, from " + counters.cpuSource() + ")",
        results.stream().anyMatch(m -> m.walBytesPerOperation() >= 0)
            ? " \"WAL B/op\": PostgreSQL's WAL written per operation (every session's)." : "");
    if (results.stream().anyMatch(m -> m.variant().equals("tx"))) {
      out.printf(Locale.ROOT, "\"tx\" is transactional mode: claim and outcome commit together "
          + "(in an application, with the business SQL), one commit instead of two.%n");
    }
    out.flush();
  }

  private static Measurement raw(List<Measurement> results, String workload) {
    return results.stream().filter(r -> r.workload().equals(workload)
        && r.variant().equals("raw")).findFirst().orElseThrow();
  }

  private static double ratio(Measurement once, Measurement raw) {
    return raw.opsPerSecond() == 0 ? 0 : once.opsPerSecond() / raw.opsPerSecond();
  }

  private Duration parseDuration(String option, String text) {
    String t = text.strip().toLowerCase(Locale.ROOT);
    try {
      Duration d;
      if (t.endsWith("ms")) {
        d = Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
      } else if (t.endsWith("s")) {
        d = Duration.ofMillis(Math.round(Double.parseDouble(t.substring(0, t.length() - 1))
            * 1000));
      } else {
        throw new NumberFormatException();
      }
      if (d.isNegative() || d.compareTo(Duration.ofMinutes(10)) > 0
          || (option.equals("--duration") && d.isZero())) {
        throw invalid(option + " must be " + (option.equals("--duration") ? "above 0" : "0 or more")
            + " and at most 10 minutes, was " + text);
      }
      return d;
    } catch (NumberFormatException e) {
      throw invalid(option + " must be a time like 3s or 500ms, was " + text);
    }
  }

  private ParameterException invalid(String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
