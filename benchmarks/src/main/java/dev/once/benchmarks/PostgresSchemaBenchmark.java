package dev.once.benchmarks;

import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The PostgreSQL schema, claim and transactional-duplicate choices of issue 19 (part 3), measured
 * side by side on one server: every variant runs in every round, the order rotating round by
 * round, and each round's ratio to the first variant is reported, so that a noisy shared machine
 * moves all variants alike.
 *
 * <ul>
 *   <li>{@code index}: lease mode's two writes per new key (the claim's {@code INSERT … ON
 *       CONFLICT DO NOTHING}, the completion's conditional {@code UPDATE}, each in autocommit),
 *       as the store sends them, on tables laid out in several ways: {@code v2} as V1+V2 shipped
 *       (BRIN on {@code expires_at}, which the completion changes: never a HOT update before
 *       PostgreSQL 16), {@code no-expiry} without an expiry index, {@code floor-*} with an expiry
 *       floor {@code purge_after} that the completion leaves alone (BRIN or B-tree, fillfactor 100
 *       or 90), and {@code v3} as {@code createSchema()} makes it now (when the jar has V3).
 *       Throughput per caller count, then the HOT share of the updates from
 *       {@code pg_stat_user_tables} and the table's size.
 *   <li>{@code purge}: {@code purgeExpired}'s statement for each layout on a filled table: a call
 *       that finds nothing, and batches of 1,000 with half the table expired.
 *   <li>{@code claim}: lease mode's claim, new keys (claim + completion) and replays (claim of a
 *       completed key): {@code insert-first} (the insert, then a read on conflict: V2's only order,
 *       and the store's while new keys dominate), one statement that inserts and reads
 *       ({@code cte-gated}: the read only when the insert found the key; {@code cte-ungated};
 *       {@code cte-read-first}: the read, and the insert only if nothing was seen), and
 *       {@code read-first} (a plain read, the insert only if nothing was seen: the store's order
 *       while duplicates dominate). Round trips per operation are counted.
 *   <li>{@code tx}: transactional mode in a transaction of its own, new keys and duplicates:
 *       {@code batch-of-three} (V2: lock timeout saved and set, insert-or-read, restored: three
 *       statements in one round trip, and a {@code ROLLBACK} for a duplicate),
 *       {@code one-statement} (the same folded into one statement, as the store sends it now), {@code cte-read-first},
 *       and {@code read-first} (a plain read in autocommit before any transaction: the store's
 *       order while duplicates dominate).
 * </ul>
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.once.benchmarks.PostgresSchemaBenchmark
 * </pre>
 *
 * Properties: {@code once.bench.postgres} (JDBC URL, default the local server's {@code test}
 * database as postgres), {@code once.bench.sections} (default {@code index,purge,claim,tx}),
 * {@code once.bench.callers} (default {@code 1,8,64}), {@code once.bench.rounds} (3),
 * {@code once.bench.seconds} (3, measured per variant and round), {@code once.bench.warmup} (1),
 * {@code once.bench.layouts} (the index section's layouts), {@code once.bench.claimVariants} and
 * {@code once.bench.txVariants} (the claim and tx sections' variants, first is the baseline),
 * {@code once.bench.purgeRows} (200000),
 * {@code once.bench.synchronousCommit} ({@code off} takes the commit's flush out of the measured
 * sessions, to compare what the statements cost the server on a machine whose disk is busy).
 * Tables are created with a run id in their names and dropped at the end.
 */
public final class PostgresSchemaBenchmark {

  private static final String URL = System.getProperty("once.bench.postgres",
      "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
  private static final List<String> SECTIONS =
      list(System.getProperty("once.bench.sections", "index,purge,claim,tx"));
  private static final List<Integer> CALLERS =
      list(System.getProperty("once.bench.callers", "1,8,64")).stream().map(Integer::valueOf)
          .collect(Collectors.toList());
  private static final int ROUNDS = Integer.getInteger("once.bench.rounds", 3);
  private static final double SECONDS =
      Double.parseDouble(System.getProperty("once.bench.seconds", "3"));
  private static final double WARMUP =
      Double.parseDouble(System.getProperty("once.bench.warmup", "1"));
  private static final int PURGE_ROWS = Integer.getInteger("once.bench.purgeRows", 200_000);
  /** synchronous_commit for the measured sessions; unset: the server's. */
  private static final String SYNCHRONOUS_COMMIT =
      System.getProperty("once.bench.synchronousCommit");
  private static final String RUN = UUID.randomUUID().toString().substring(0, 6);

  private static final long LEASE = 30_000_000L; // µs
  private static final long RETENTION = 24 * 3600_000_000L; // µs
  private static final byte[] FINGERPRINT = new byte[32];
  private static final byte[] BODY = "{\"id\":\"ch_1\"}".getBytes(StandardCharsets.UTF_8);
  private static final String COLUMNS = "scope, tenant, idem_key, status, fingerprint, token,"
      + " lease_until, attempts, checkpoint_name, checkpoint_data, outcome_kind,"
      + " outcome_media_type, outcome_body, last_error, created_at, updated_at, expires_at,"
      + " claim_id";
  private static final String BY_KEY = " WHERE scope = ? AND tenant = ? AND idem_key = ?";
  private static final String OWNED = BY_KEY + " AND token = ? AND status = 'IN_PROGRESS'";

  static {
    Arrays.fill(FINGERPRINT, (byte) 7);
  }

  private static final List<String> created = new ArrayList<>();
  private static PGSimpleDataSource dataSource;

  private PostgresSchemaBenchmark() {}

  public static void main(String[] args) throws Exception {
    dataSource = new PGSimpleDataSource();
    dataSource.setURL(URL);
    System.out.printf(Locale.ROOT, "PostgresSchemaBenchmark %s: %s; sections %s, callers %s,"
            + " %d rounds of %.1f s per variant after %.1f s warm-up; synchronous_commit %s%n",
        RUN, URL, SECTIONS, CALLERS, ROUNDS, SECONDS, WARMUP,
        SYNCHRONOUS_COMMIT == null ? "as the server's" : SYNCHRONOUS_COMMIT);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT version()")) {
      rs.next();
      System.out.println(rs.getString(1));
    }
    System.out.println("load average at start: " + loadAverage());
    int max = CALLERS.stream().mapToInt(Integer::intValue).max().orElse(1);
    ExecutorService threads = Executors.newFixedThreadPool(max);
    try {
      if (SECTIONS.contains("index")) {
        index(threads);
      }
      if (SECTIONS.contains("purge")) {
        purge();
      }
      if (SECTIONS.contains("claim")) {
        claim(threads);
      }
      if (SECTIONS.contains("tx")) {
        transactional(threads);
      }
    } finally {
      threads.shutdownNow();
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        for (String table : created) {
          s.execute("DROP TABLE IF EXISTS " + table);
        }
      }
    }
    System.out.println("load average at end: " + loadAverage());
  }

  // ==============================================================================================
  // layouts

  /** A way to lay out the records table and find expired rows. */
  enum Layout {
    V2("BRIN (expires_at) + BRIN (lease_until), as V1+V2 shipped"),
    NO_EXPIRY("BRIN (lease_until) only; purge scans the table"),
    FLOOR_BRIN("purge_after, BRIN; BRIN (lease_until)"),
    FLOOR_BTREE("purge_after, B-tree; BRIN (lease_until)"),
    FLOOR_BRIN_FF90("purge_after, BRIN; fillfactor 90"),
    FLOOR_BTREE_FF90("purge_after, B-tree; fillfactor 90"),
    V3("createSchema() as shipped now (all versions)");

    final String description;

    Layout(String description) {
      this.description = description;
    }

    String label() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
  }

  /** A table of a layout, and whether it has the expiry floor column. */
  record Table(String name, Layout layout, boolean floor) {}

  static Table create(Layout layout, String prefix) throws SQLException {
    String name = "sb_" + prefix + "_" + RUN;
    created.add(name);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + name);
      switch (layout) {
        case V2 -> {
          List<String> resources = JdbcDialect.POSTGRESQL.schemaResources();
          for (String resource : resources.subList(0, 2)) {
            for (String sql : statements(resource, name)) {
              s.execute(sql);
            }
          }
        }
        case V3 -> JdbcStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL).table(name).build()
            .createSchema();
        default -> {
          boolean ff90 = layout == Layout.FLOOR_BRIN_FF90 || layout == Layout.FLOOR_BTREE_FF90;
          boolean floor = layout != Layout.NO_EXPIRY;
          s.execute("CREATE TABLE " + name + " (scope text COLLATE \"C\" NOT NULL,"
              + " tenant text COLLATE \"C\" NOT NULL, idem_key text COLLATE \"C\" NOT NULL,"
              + " status text NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED')),"
              + " fingerprint bytea NOT NULL CHECK (octet_length(fingerprint) = 32),"
              + " token bigint NOT NULL, lease_until bigint NOT NULL, attempts integer NOT NULL,"
              + " checkpoint_name text, checkpoint_data bytea,"
              + " outcome_kind text CHECK (outcome_kind IN ('SUCCESS', 'FAILURE')),"
              + " outcome_media_type text, outcome_body bytea, last_error text,"
              + " created_at bigint NOT NULL, updated_at bigint NOT NULL,"
              + " expires_at bigint NOT NULL, claim_id bigint NOT NULL DEFAULT 0,"
              + (floor ? " purge_after bigint NOT NULL DEFAULT 0," : "")
              + " PRIMARY KEY (scope, tenant, idem_key))"
              + (ff90 ? " WITH (fillfactor = 90)" : ""));
          s.execute("CREATE INDEX " + name + "_reap_idx ON " + name + " USING brin (lease_until)");
          if (floor) {
            boolean brin = layout == Layout.FLOOR_BRIN || layout == Layout.FLOOR_BRIN_FF90;
            s.execute("CREATE INDEX " + name + "_purge_idx ON " + name
                + (brin ? " USING brin" : "") + " (purge_after)");
          }
        }
      }
      return new Table(name, layout, hasColumn(c, name, "purge_after"));
    }
  }

  static boolean hasColumn(Connection c, String table, String column) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_attribute WHERE attrelid ="
        + " to_regclass(?)::oid AND attname = ? AND attnum > 0 AND NOT attisdropped")) {
      ps.setString(1, table);
      ps.setString(2, column);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** The statements of a shipped schema resource for {@code table} (comment lines dropped). */
  static List<String> statements(String resource, String table) {
    String text;
    try (InputStream in = PostgresSchemaBenchmark.class.getClassLoader()
        .getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + resource);
      }
      text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    text = text.replace("${table}", table).replace("${name}", table);
    List<String> out = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    for (String line : text.split("\n")) {
      String t = line.strip();
      if (t.isEmpty() || t.startsWith("--")) {
        continue;
      }
      current.append(line).append('\n');
      if (t.endsWith(";")) {
        String sql = current.toString().strip();
        out.add(sql.substring(0, sql.length() - 1));
        current.setLength(0);
      }
    }
    return out;
  }

  // ==============================================================================================
  // the statements, as the store sends them

  static String insertSql(Table t) {
    return "INSERT INTO " + t.name() + " (" + COLUMNS + (t.floor() ? ", purge_after" : "")
        + ") VALUES (" + "?, ".repeat(t.floor() ? 18 : 17) + "?)"
        + " ON CONFLICT (scope, tenant, idem_key) DO NOTHING";
  }

  static String completeSql(Table t) {
    return "UPDATE " + t.name() + " SET status = 'COMPLETED', outcome_kind = ?,"
        + " outcome_media_type = ?, outcome_body = ?, updated_at = ?, expires_at = ?"
        + (t.floor() ? ", purge_after = LEAST(purge_after, ?)" : "") + OWNED;
  }

  static String findSql(Table t) {
    return "SELECT " + COLUMNS + " FROM " + t.name() + BY_KEY;
  }

  static String prefixed(String alias) {
    return alias + "." + COLUMNS.replace(", ", ", " + alias + ".");
  }

  /** Binds a fresh IN_PROGRESS record's columns; returns the next index. */
  static int bindFresh(PreparedStatement ps, Table t, String key, long now) throws SQLException {
    return bindFresh(ps, 1, t, key, now);
  }

  static int bindFresh(PreparedStatement ps, int from, Table t, String key, long now)
      throws SQLException {
    int i = bindKey(ps, from, key);
    ps.setString(i++, "IN_PROGRESS");
    ps.setBytes(i++, FINGERPRINT);
    ps.setLong(i++, Math.max(1, now / 1000));
    ps.setLong(i++, now + LEASE);
    ps.setInt(i++, 1);
    ps.setNull(i++, Types.VARCHAR);
    ps.setNull(i++, Types.BINARY);
    ps.setNull(i++, Types.VARCHAR);
    ps.setNull(i++, Types.VARCHAR);
    ps.setNull(i++, Types.BINARY);
    ps.setNull(i++, Types.VARCHAR);
    ps.setLong(i++, now);
    ps.setLong(i++, now);
    ps.setLong(i++, now + RETENTION);
    ps.setLong(i++, now ^ 0x5DEECE66DL);
    if (t.floor()) {
      ps.setLong(i++, now + RETENTION);
    }
    return i;
  }

  static int bindKey(PreparedStatement ps, int i, String key) throws SQLException {
    ps.setString(i, "bench");
    ps.setString(i + 1, "t");
    ps.setString(i + 2, key);
    return i + 3;
  }

  /** Binds the completion's SET and WHERE parameters from 1. */
  static void bindComplete(PreparedStatement ps, Table t, String key, long token, long now)
      throws SQLException {
    int i = 1;
    ps.setString(i++, "SUCCESS");
    ps.setString(i++, "text/plain; charset=utf-8");
    ps.setBytes(i++, BODY);
    ps.setLong(i++, now);
    ps.setLong(i++, now + RETENTION);
    if (t.floor()) {
      ps.setLong(i++, now + RETENTION);
    }
    i = bindKey(ps, i, key);
    ps.setLong(i, token);
  }

  /** Now in epoch microseconds, as the store floors instants (so a completion moves the expiry). */
  static long nowMicros() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
  }

  /** The token {@link #bindFresh} wrote for a record claimed at {@code now}. */
  static long token(long now) {
    return Math.max(1, now / 1000);
  }

  static void claimNew(Connection c, Table t, String key, long now, Caller caller)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(insertSql(t))) {
      bindFresh(ps, t, key, now);
      caller.trips++;
      if (ps.executeUpdate() != 1) {
        throw new IllegalStateException("benchmark keys must be new: " + key);
      }
    }
  }

  static void complete(Connection c, Table t, String key, long token, Caller caller)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(completeSql(t))) {
      bindComplete(ps, t, key, token, nowMicros());
      caller.trips++;
      if (ps.executeUpdate() != 1) {
        throw new IllegalStateException("the completion of " + key + " matched no row");
      }
    }
  }

  // ==============================================================================================
  // the runner

  /** One calling thread's connection and counters. */
  static final class Caller {
    final int id;
    final Connection c;
    final SplittableRandom random;
    long seq;
    long ops;
    long trips;

    Caller(int id, Connection c) {
      this.id = id;
      this.c = c;
      this.random = new SplittableRandom(id * 31L + 17);
    }
  }

  @FunctionalInterface
  interface Op {
    void run(Caller caller) throws Exception;
  }

  record Variant(String name, Op op) {}

  /** What one variant did in one round. */
  record Sample(double opsPerSecond, double tripsPerOp) {}

  private static volatile int phase; // 0 warm-up, 1 measuring, 2 stop

  static List<Caller> connect(int n) throws SQLException {
    List<Caller> callers = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Connection c = DriverManager.getConnection(URL);
      if (SYNCHRONOUS_COMMIT != null) {
        try (Statement s = c.createStatement()) {
          s.execute("SET synchronous_commit = " + SYNCHRONOUS_COMMIT);
        }
      }
      callers.add(new Caller(i, c));
    }
    return callers;
  }

  static void close(List<Caller> callers) {
    for (Caller caller : callers) {
      try {
        caller.c.close();
      } catch (SQLException e) {
        // best effort
      }
    }
  }

  static Sample runOnce(ExecutorService threads, List<Caller> callers, Op op) throws Exception {
    phase = 0;
    List<Future<?>> futures = new ArrayList<>();
    for (Caller caller : callers) {
      caller.ops = 0;
      caller.trips = 0;
      futures.add(threads.submit(() -> {
        boolean counting = false;
        while (true) {
          int p = phase;
          if (p == 2) {
            return null;
          }
          if (p == 1 && !counting) {
            counting = true;
            caller.ops = 0;
            caller.trips = 0;
          }
          op.run(caller);
          if (counting) {
            caller.ops++;
          }
        }
      }));
    }
    Thread.sleep((long) (WARMUP * 1000));
    long start = System.nanoTime();
    phase = 1;
    Thread.sleep((long) (SECONDS * 1000));
    phase = 2;
    long end = System.nanoTime();
    for (Future<?> f : futures) {
      f.get(); // rethrows a variant's failure
    }
    long ops = 0;
    long trips = 0;
    for (Caller caller : callers) {
      ops += caller.ops;
      trips += caller.trips;
    }
    // Each thread counts the operation it finished after the stop: the window is approximate
    // by at most one operation per thread.
    return new Sample(ops / ((end - start) / 1e9), ops == 0 ? 0 : (double) trips / ops);
  }

  /** Runs every variant in every round, rotating the order; prints the table and returns it. */
  static Map<String, List<Sample>> compare(String title, ExecutorService threads,
      List<Caller> callers, List<Variant> variants) throws Exception {
    Map<String, List<Sample>> samples = new LinkedHashMap<>();
    for (Variant v : variants) {
      samples.put(v.name(), new ArrayList<>());
    }
    for (int round = 0; round < ROUNDS; round++) {
      for (int j = 0; j < variants.size(); j++) {
        Variant v = variants.get((round + j) % variants.size());
        samples.get(v.name()).add(runOnce(threads, callers, v.op()));
      }
    }
    System.out.printf(Locale.ROOT, "%n%s, %d callers (load %s)%n", title, callers.size(),
        loadAverage());
    StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "%-28s", "variant"));
    for (int r = 1; r <= ROUNDS; r++) {
      header.append(String.format(Locale.ROOT, " %10s", "ops/s r" + r));
    }
    header.append(String.format(Locale.ROOT, " %8s %s", "trips", "ratio to first, per round"));
    System.out.println(header);
    List<Sample> base = samples.get(variants.get(0).name());
    for (Variant v : variants) {
      List<Sample> s = samples.get(v.name());
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-28s", v.name()));
      for (Sample sample : s) {
        line.append(String.format(Locale.ROOT, " %10.0f", sample.opsPerSecond()));
      }
      line.append(String.format(Locale.ROOT, " %8.2f ", s.get(0).tripsPerOp()));
      double[] ratios = new double[s.size()];
      for (int r = 0; r < s.size(); r++) {
        ratios[r] = s.get(r).opsPerSecond() / base.get(r).opsPerSecond();
        line.append(String.format(Locale.ROOT, " %.2f", ratios[r]));
      }
      Arrays.sort(ratios);
      line.append(String.format(Locale.ROOT, "  (median %.2f)", ratios[ratios.length / 2]));
      System.out.println(line);
    }
    return samples;
  }

  static String loadAverage() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).strip()
          .split(" ")[0];
    } catch (IOException e) {
      return "?";
    }
  }

  // ==============================================================================================
  // index: the layouts under lease mode's new-key writes

  static void index(ExecutorService threads) throws Exception {
    List<Layout> layouts = new ArrayList<>();
    for (String name : list(System.getProperty("once.bench.layouts",
        "v2,no-expiry,floor-brin,floor-btree,floor-brin-ff90,floor-btree-ff90,v3"))) {
      Layout layout = Layout.valueOf(name.toUpperCase(Locale.ROOT).replace('-', '_'));
      if (layout == Layout.V3 && JdbcDialect.POSTGRESQL.schemaResources().size() < 3) {
        continue; // the jar still ships V1+V2 only
      }
      layouts.add(layout);
    }
    System.out.println("\n== index: lease mode's claim INSERT + completion UPDATE per new key");
    for (Layout layout : layouts) {
      System.out.printf("  %-18s %s%n", layout.label(), layout.description);
    }
    for (int n : CALLERS) {
      List<Table> tables = new ArrayList<>();
      List<Variant> variants = new ArrayList<>();
      for (Layout layout : layouts) {
        Table t = create(layout, "ix" + n + "_" + layout.name().toLowerCase(Locale.ROOT));
        tables.add(t);
        variants.add(new Variant(layout.label(), caller -> {
          String key = "k-" + caller.id + "-" + caller.seq++;
          long now = nowMicros();
          claimNew(caller.c, t, key, now, caller);
          complete(caller.c, t, key, token(now), caller);
        }));
      }
      List<Caller> callers = connect(n);
      try {
        compare("index: new keys (claim + completion, autocommit)", threads, callers, variants);
      } finally {
        close(callers); // a backend flushes its statistics as it exits
      }
      printHot(tables);
    }
  }

  static void printHot(List<Table> tables) throws Exception {
    Map<String, long[]> last = new LinkedHashMap<>();
    for (int attempt = 0; attempt < 40; attempt++) {
      Map<String, long[]> now = new LinkedHashMap<>();
      try (Connection c = dataSource.getConnection()) {
        for (Table t : tables) {
          try (PreparedStatement ps = c.prepareStatement("SELECT n_tup_upd, n_tup_hot_upd,"
              + " pg_relation_size(relid), pg_indexes_size(relid)"
              + " FROM pg_stat_user_tables WHERE relname = ?")) {
            ps.setString(1, t.name());
            try (ResultSet rs = ps.executeQuery()) {
              now.put(t.name(), rs.next()
                  ? new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)}
                  : new long[4]);
            }
          }
        }
      }
      boolean stable = !last.isEmpty();
      for (String k : now.keySet()) {
        stable &= last.containsKey(k) && Arrays.equals(last.get(k), now.get(k));
      }
      last = now;
      if (stable) {
        break;
      }
      Thread.sleep(500);
    }
    System.out.printf("%-28s %12s %12s %7s %10s %10s%n", "layout", "updates", "HOT", "HOT %",
        "heap MB", "index MB");
    for (Table t : tables) {
      long[] v = last.get(t.name());
      System.out.printf(Locale.ROOT, "%-28s %12d %12d %6.1f%% %10.1f %10.1f%n", t.layout().label(),
          v[0], v[1], v[0] == 0 ? 0 : 100.0 * v[1] / v[0], v[2] / 1048576.0, v[3] / 1048576.0);
    }
  }

  // ==============================================================================================
  // purge

  static void purge() throws Exception {
    System.out.printf("%n== purge: purgeExpired's statement, %,d rows per table%n", PURGE_ROWS);
    List<Layout> layouts = new ArrayList<>(List.of(Layout.V2, Layout.NO_EXPIRY, Layout.FLOOR_BRIN,
        Layout.FLOOR_BTREE));
    if (JdbcDialect.POSTGRESQL.schemaResources().size() >= 3) {
      layouts.add(Layout.V3);
    }
    System.out.printf("%-28s %14s %14s %16s%n", "layout", "nothing (ms)", "batch (ms)",
        "rows per batch");
    for (Layout layout : layouts) {
      for (boolean ordered : layout == Layout.FLOOR_BRIN ? new boolean[] {true, false}
          : layout == Layout.NO_EXPIRY ? new boolean[] {false} : new boolean[] {true}) {
        Table t = create(layout, "pg_" + layout.name().toLowerCase(Locale.ROOT)
            + (ordered ? "" : "_u"));
        fillForPurge(t);
        String sql = purgeSql(t, ordered);
        // Nothing expired: the instant before the first row's expiry.
        double nothing = timePurge(sql, purgeBase + RETENTION, 1000, 20)[0];
        // Half the short-retention rows expired (20 batches delete 20,000 of them).
        long half = purgeBase + (long) (PURGE_ROWS / 2) * 10000 + RETENTION;
        double[] batch = timePurge(sql, half, 1000, 20);
        System.out.printf(Locale.ROOT, "%-28s %14.2f %14.2f %16.0f%n",
            layout.label() + (ordered ? "" : " (unordered)"), nothing, batch[0], batch[1]);
      }
    }
  }

  private static long purgeBase;

  /**
   * Rows in insertion order, one per 10 ms of claim time, completed 5 ms after their claim; a
   * tenth of them from a scope that keeps its records 7 days (the rest: 24 h).
   */
  static void fillForPurge(Table t) throws SQLException {
    purgeBase = nowMicros() / 1_000_000 * 1_000_000;
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("INSERT INTO " + t.name() + " (" + COLUMNS + (t.floor() ? ", purge_after" : "")
          + ") SELECT 'bench', 't', 'k' || g, 'COMPLETED', decode(repeat('07', 32), 'hex'),"
          + " g, c + 30000000, 1, NULL, NULL, 'SUCCESS', 'text/plain', '\\x7b7d'::bytea, NULL,"
          + " c, c + 5000, c + 5000 + r, 0" + (t.floor() ? ", c + r" : "")
          + " FROM (SELECT g, " + purgeBase + " + g * 10000 AS c,"
          + " CASE WHEN g % 10 = 0 THEN 7 ELSE 1 END * " + RETENTION + " AS r"
          + " FROM generate_series(1, " + PURGE_ROWS + ") g) AS x");
      s.execute("VACUUM ANALYZE " + t.name());
    }
  }

  /** Mean milliseconds per call and rows per call of {@code calls} purge calls. */
  static double[] timePurge(String sql, long now, int limit, int calls) throws SQLException {
    long total = 0;
    long rows = 0;
    try (Connection c = dataSource.getConnection()) {
      for (int i = 0; i < calls + 2; i++) {
        long start = System.nanoTime();
        int n;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
          ps.setLong(1, now);
          ps.setLong(2, now);
          ps.setInt(3, limit);
          ps.setLong(4, now);
          n = ps.executeUpdate();
        }
        if (i >= 2) { // the first two: plan cache, buffers
          total += System.nanoTime() - start;
          rows += n;
        }
      }
    }
    return new double[] {total / 1e6 / calls, (double) rows / calls};
  }

  /**
   * purgeExpired's statement for the layout; parameters: now, now, limit, now. Ordered: oldest
   * first, as the store's statement; unordered, a bitmap scan of a BRIN index can stop early.
   */
  static String purgeSql(Table t, boolean ordered) {
    String n = t.name();
    // Without the floor the second parameter is only checked, to keep one parameter list.
    String where = t.floor() ? "purge_after <= ? AND expires_at <= ?"
        : "expires_at <= ? AND ?::int8 IS NOT NULL";
    String order = !ordered ? "" : t.floor() ? " ORDER BY purge_after" : " ORDER BY expires_at";
    return "DELETE FROM " + n + " WHERE (scope, tenant, idem_key) IN"
        + " (SELECT scope, tenant, idem_key FROM " + n + " WHERE " + where + order
        + " LIMIT ? FOR UPDATE SKIP LOCKED) AND expires_at <= ?";
  }

  // ==============================================================================================
  // claim: lease mode's replay in one round trip or two

  static void claim(ExecutorService threads) throws Exception {
    System.out.println("\n== claim: lease mode, new keys (claim + completion) and replays");
    for (int n : CALLERS) {
      Layout layout = JdbcDialect.POSTGRESQL.schemaResources().size() >= 3 ? Layout.V3
          : Layout.FLOOR_BTREE;
      List<String> names = list(System.getProperty("once.bench.claimVariants",
          "insert-first,cte-gated,cte-ungated,cte-read-first,read-first"));
      List<Variant> fresh = new ArrayList<>();
      for (String name : names) {
        Table t = create(layout, "cl" + n + "_" + name.replace('-', '_'));
        fresh.add(new Variant(name, caller -> {
          String key = "k-" + caller.id + "-" + caller.seq++;
          long now = nowMicros();
          if (!claimVariant(name, caller, t, key, now)) {
            throw new IllegalStateException("a new key was not inserted: " + key);
          }
          complete(caller.c, t, key, token(now), caller);
        }));
      }
      Table done = create(layout, "cl" + n + "_replays");
      int keys = 20_000;
      fillCompleted(done, keys);
      List<Variant> replays = new ArrayList<>();
      for (String name : names) {
        replays.add(new Variant(name, caller -> {
          String key = "r-" + caller.random.nextInt(keys);
          if (claimVariant(name, caller, done, key, nowMicros())) {
            throw new IllegalStateException("a replay inserted: " + key);
          }
        }));
      }
      List<Caller> callers = connect(n);
      try {
        compare("claim: new keys", threads, callers, fresh);
        compare("claim: replays", threads, callers, replays);
      } finally {
        close(callers);
      }
    }
  }

  static void fillCompleted(Table t, int keys) throws SQLException {
    long now = nowMicros();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("INSERT INTO " + t.name() + " (" + COLUMNS + (t.floor() ? ", purge_after" : "")
          + ") SELECT 'bench', 't', 'r-' || g, 'COMPLETED', decode(repeat('07', 32), 'hex'),"
          + " 1, " + now + ", 1, NULL, NULL, 'SUCCESS', 'text/plain; charset=utf-8',"
          + " convert_to('{\"id\":\"ch_1\"}', 'UTF8'), NULL, " + now + ", " + now + ", "
          + (now + RETENTION) + ", 0" + (t.floor() ? ", " + (now + RETENTION) : "")
          + " FROM generate_series(0, " + (keys - 1) + ") g");
      s.execute("VACUUM ANALYZE " + t.name());
    }
  }

  /** Runs one claim variant; true if it inserted, false if it read an existing row. */
  static boolean claimVariant(String variant, Caller caller, Table t, String key, long now)
      throws SQLException {
    Connection c = caller.c;
    switch (variant) {
      case "insert-first": {
        try (PreparedStatement ps = c.prepareStatement(insertSql(t))) {
          bindFresh(ps, t, key, now);
          caller.trips++;
          if (ps.executeUpdate() == 1) {
            return true;
          }
        }
        return !seen(readExisting(caller, t, key), key);
      }
      case "cte-gated":
      case "cte-ungated":
      case "cte-read-first": {
        boolean readFirst = variant.equals("cte-read-first");
        String sql = readFirst ? readOrInsertSql(t, false)
            : insertOrReadSql(t, variant.equals("cte-gated"));
        try (PreparedStatement ps = c.prepareStatement(sql)) {
          if (readFirst) {
            bindFresh(ps, bindKey(ps, 1, key), t, key, now);
          } else {
            bindKey(ps, bindFresh(ps, t, key, now), key);
          }
          caller.trips++;
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            if (rs.getBoolean(1)) {
              return true;
            }
            if (rs.getString(2) == null) {
              throw new IllegalStateException("no row seen for " + key);
            }
            decode(rs, 1);
            return false;
          }
        }
      }
      case "read-first": {
        if (readExisting(caller, t, key)) {
          return false;
        }
        try (PreparedStatement ps = c.prepareStatement(insertSql(t))) {
          bindFresh(ps, t, key, now);
          caller.trips++;
          if (ps.executeUpdate() == 1) {
            return true;
          }
        }
        return !seen(readExisting(caller, t, key), key);
      }
      default:
        throw new IllegalArgumentException(variant);
    }
  }

  /** {@code true}, or a failure if the key had no row after its insert found it. */
  static boolean seen(boolean found, String key) {
    if (!found) {
      throw new IllegalStateException("no row seen for " + key);
    }
    return true;
  }

  /** The store's read by key, decoded; whether a row was there. */
  static boolean readExisting(Caller caller, Table t, String key) throws SQLException {
    try (PreparedStatement ps = caller.c.prepareStatement(findSql(t))) {
      bindKey(ps, 1, key);
      caller.trips++;
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return false;
        }
        decode(rs, 0);
        return true;
      }
    }
  }

  /** Reads every column as the store's row mapper does. */
  static void decode(ResultSet rs, int offset) throws SQLException {
    for (int i = 1; i <= 18; i++) {
      switch (i) {
        case 5, 10, 13 -> rs.getBytes(offset + i);
        case 6, 7, 15, 16, 17, 18 -> rs.getLong(offset + i);
        case 8 -> rs.getInt(offset + i);
        default -> rs.getString(offset + i);
      }
    }
  }

  /**
   * Insert unless present, and the committed row if not, in one statement. Gated: the read runs
   * only when the insert found the key (a one-time filter on the insert's result), so a new key
   * costs no index probe beyond the insert's own.
   */
  static String insertOrReadSql(Table t, boolean gated) {
    String n = t.name();
    String read = gated
        ? " LEFT JOIN (SELECT * FROM " + n + " WHERE NOT EXISTS (SELECT 1 FROM ins)"
            + " AND scope = ? AND tenant = ? AND idem_key = ?) r ON true"
        : " LEFT JOIN " + n + " r ON r.scope = ? AND r.tenant = ? AND r.idem_key = ?";
    return "WITH ins AS (" + insertSql(t) + " RETURNING 1)"
        + " SELECT EXISTS (SELECT 1 FROM ins), " + prefixed("r")
        + " FROM (VALUES (1)) AS one (x)" + read;
  }

  /**
   * Read, and insert only if no row was seen, in one statement: a replay costs a read (the insert
   * gets no row to insert), a new key a missed probe and the insert. Parameters: the key, then
   * the fresh record. With {@code lockWait} (transactional mode) the session's lock timeout is
   * saved and ours set by a step the inserted row is joined with (so before the insert can wait
   * on a concurrent claim), and restored by a step that reads the insert's result (so after it).
   */
  static String readOrInsertSql(Table t, boolean lockWait) {
    String values = insertSql(t).replace(") VALUES (", ") SELECT v.* FROM "
        + (lockWait ? "lt, " : "") + "(VALUES (")
        .replace(" ON CONFLICT", ") AS v WHERE NOT EXISTS (SELECT 1 FROM cur) ON CONFLICT");
    String with = "WITH " + (lockWait ? LOCK_TIMEOUT_CTE + ", " : "")
        + "cur AS MATERIALIZED (" + findSql(t) + "), ins AS (" + values + " RETURNING 1)";
    if (!lockWait) {
      return with + " SELECT EXISTS (SELECT 1 FROM ins), c.* FROM (VALUES (1)) AS one (x)"
          + " LEFT JOIN cur c ON true";
    }
    return with + ", " + RESTORE_CTE
        + " SELECT f.inserted, c.* FROM flag f CROSS JOIN restored LEFT JOIN cur c ON true";
  }

  /** Saves the session's lock timeout (column saved) and sets ours, transaction-locally. */
  private static final String LOCK_TIMEOUT_CTE = "lt AS MATERIALIZED (SELECT s.saved,"
      + " set_config('lock_timeout', '" + 5000 + "ms', true) AS applied"
      + " FROM (SELECT current_setting('lock_timeout') AS saved OFFSET 0) AS s)";
  /** Whether the insert inserted (flag), then the saved lock timeout restored. */
  private static final String RESTORE_CTE =
      "flag AS MATERIALIZED (SELECT EXISTS (SELECT 1 FROM ins) AS inserted),"
      + " restored AS MATERIALIZED (SELECT set_config('lock_timeout', lt.saved, true)"
      + " FROM flag, lt)";

  // ==============================================================================================
  // tx: transactional mode's claim and its duplicate

  private static final long LOCK_WAIT_MS = 5000;
  private static final String SET_TIMEOUT = "SELECT set_config('lock_timeout', CASE WHEN"
      + " set_config('once.lock_timeout', current_setting('lock_timeout'), true) IS NULL THEN NULL"
      + " ELSE '" + LOCK_WAIT_MS + "ms' END, true)";
  private static final String RESTORE_TIMEOUT =
      "SELECT set_config('lock_timeout', current_setting('once.lock_timeout'), true)";

  static void transactional(ExecutorService threads) throws Exception {
    System.out.println("\n== tx: transactional mode (a transaction of its own), new keys and"
        + " duplicates");
    for (int n : CALLERS) {
      Layout layout = JdbcDialect.POSTGRESQL.schemaResources().size() >= 3 ? Layout.V3
          : Layout.FLOOR_BTREE;
      List<String> names = list(System.getProperty("once.bench.txVariants",
          "batch-of-three,one-statement,cte-read-first,read-first"));
      List<Variant> fresh = new ArrayList<>();
      for (String name : names) {
        Table t = create(layout, "tx" + n + "_" + name.replace('-', '_'));
        fresh.add(new Variant(name, caller -> {
          String key = "k-" + caller.id + "-" + caller.seq++;
          long now = nowMicros();
          if (!txCall(name, caller, t, key, now)) {
            throw new IllegalStateException("a new key was not inserted: " + key);
          }
        }));
      }
      Table done = create(layout, "tx" + n + "_replays");
      int keys = 20_000;
      fillCompleted(done, keys);
      List<Variant> duplicates = new ArrayList<>();
      for (String name : names) {
        duplicates.add(new Variant(name, caller -> {
          String key = "r-" + caller.random.nextInt(keys);
          if (txCall(name, caller, done, key, nowMicros())) {
            throw new IllegalStateException("a duplicate inserted: " + key);
          }
        }));
      }
      List<Caller> callers = connect(n);
      try {
        compare("tx: new keys (claim, then completion + COMMIT)", threads, callers, fresh);
        compare("tx: duplicates (replayed)", threads, callers, duplicates);
      } finally {
        close(callers);
      }
    }
  }

  /** One transactional call with empty logic; true if it ran (new key), false if replayed. */
  static boolean txCall(String variant, Caller caller, Table t, String key, long now)
      throws SQLException {
    Connection c = caller.c;
    if (variant.equals("read-first")) {
      if (readExisting(caller, t, key)) {
        return false; // answered from committed data, no transaction
      }
    }
    c.setAutoCommit(false);
    try {
      boolean inserted;
      boolean readFirst = variant.equals("cte-read-first");
      String sql = variant.equals("batch-of-three")
          ? SET_TIMEOUT + "; " + insertOrReadSql(t, false) + "; " + RESTORE_TIMEOUT
          : readFirst ? readOrInsertSql(t, true) : foldedClaimSql(t);
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        if (readFirst) {
          bindFresh(ps, bindKey(ps, 1, key), t, key, now);
        } else {
          bindKey(ps, bindFresh(ps, t, key, now), key);
        }
        caller.trips++;
        try (ResultSet rs = variant.equals("batch-of-three") ? secondResultSet(ps)
            : ps.executeQuery()) {
          rs.next();
          inserted = rs.getBoolean(1);
          if (!inserted) {
            decode(rs, 1);
          }
        }
      }
      if (!inserted) {
        caller.trips++;
        c.rollback();
        return false;
      }
      String completeSql = "WITH done AS (" + completeSql(t) + " RETURNING 1)"
          + " SELECT 1 / count(*) FROM done; COMMIT";
      try (PreparedStatement ps = c.prepareStatement(completeSql)) {
        bindComplete(ps, t, key, token(now), nowMicros());
        caller.trips++;
        ps.execute();
      }
      return true;
    } finally {
      c.setAutoCommit(true);
    }
  }

  /**
   * Transactional mode's claim as one statement, as the store sends it: the lock timeout saved
   * and set by a step the inserted row is joined with (so before the insert can wait), the insert,
   * the timeout restored by a step that reads the insert's result (so after it), and the existing
   * row read only if the insert found the key.
   */
  static String foldedClaimSql(Table t) {
    String n = t.name();
    String insert = insertSql(t).replace(") VALUES (", ") SELECT v.* FROM lt, (VALUES (")
        .replace(" ON CONFLICT", ") AS v ON CONFLICT");
    return "WITH " + LOCK_TIMEOUT_CTE + ", ins AS (" + insert + " RETURNING 1), " + RESTORE_CTE
        + " SELECT f.inserted, " + prefixed("r") + " FROM flag f CROSS JOIN restored"
        + " LEFT JOIN (SELECT * FROM " + n + " WHERE NOT EXISTS (SELECT 1 FROM ins)"
        + " AND scope = ? AND tenant = ? AND idem_key = ?) r ON true";
  }

  static ResultSet secondResultSet(PreparedStatement ps) throws SQLException {
    boolean isResultSet = ps.execute();
    int seen = 0;
    while (true) {
      if (isResultSet) {
        if (++seen == 2) {
          return ps.getResultSet();
        }
      } else if (ps.getUpdateCount() == -1) {
        throw new SQLException("fewer than 2 result sets");
      }
      isResultSet = ps.getMoreResults(Statement.KEEP_CURRENT_RESULT);
    }
  }

  // ==============================================================================================

  static List<String> list(String csv) {
    List<String> out = new ArrayList<>();
    for (String s : csv.split(",")) {
      if (!s.isBlank()) {
        out.add(s.strip());
      }
    }
    return out;
  }
}
