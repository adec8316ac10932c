package dev.once.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.cli.demo.CommandRun;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/** {@code once bench}: both sides measured on each store, scratch tables gone afterwards. */
class BenchCommandTest {

  /** Short enough for a test; the figures are not asserted, only that both sides ran. */
  private static final String[] QUICK = {"--duration", "150ms", "--warmup", "0ms", "--rounds", "2",
      "--threads", "2"};

  private record Run(int exitCode, String out, String err, List<BenchCommand.Measurement> results) {}

  private static Run bench(String... args) {
    List<String> all = new ArrayList<>(List.of("bench"));
    all.addAll(List.of(QUICK));
    all.addAll(List.of(args));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = new CommandLine(new OnceCommand());
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    int exitCode = commandLine.execute(all.toArray(String[]::new));
    BenchCommand bench = commandLine.getSubcommands().get("bench").getCommand();
    return new Run(exitCode, out.toString(), err.toString(), bench.lastResults());
  }

  private static void assertBothSidesOfBothWorkloadsRan(Run run) {
    assertThat(run.exitCode()).as(run.err()).isZero();
    boolean sql = run.results().stream().anyMatch(m -> m.variant().equals("tx"));
    assertThat(run.results()).extracting(m -> m.workload() + "/" + m.variant())
        .containsExactlyElementsOf(sql
            ? List.of("new keys/raw", "new keys/once", "new keys/tx", "replays/raw", "replays/once")
            : List.of("new keys/raw", "new keys/once", "replays/raw", "replays/once"));
    assertThat(run.results()).allSatisfy(m -> {
      assertThat(m.operations()).isPositive();
      assertThat(m.latency().count()).isEqualTo(m.operations());
      assertThat(m.latency().percentile(99)).isGreaterThanOrEqualTo(m.latency().percentile(50));
    });
  }

  @Test
  void inMemoryPrintsATableWithRatios() {
    Run run = bench("--store", "memory:");

    assertBothSidesOfBothWorkloadsRan(run);
    assertThat(run.out()).contains("ConcurrentHashMap putIfAbsent + put", "ConcurrentHashMap get",
        "Once.call: claim + run + complete", "vs raw").containsPattern("\\d+\\.\\d\\dx");
  }

  @Test
  void onSqliteItUsesScratchTablesAndLeavesTheRecordsAlone(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("once.db");
    assertThat(CommandRun.run("schema", "--apply", "--store", "sqlite:" + file).exitCode())
        .isZero();

    Run run = bench("--store", "sqlite:" + file, "--json");

    assertBothSidesOfBothWorkloadsRan(run);
    assertThat(run.out().strip()).startsWith("{\"store\":\"sqlite:" + file + "\",\"threads\":2,")
        .contains("\"variant\":\"raw\",\"operation\":\"INSERT ... ON CONFLICT DO NOTHING + "
            + "UPDATE\"", "\"onceOverRaw\":{\"new keys\":", "\"new keys (tx)\":",
            "\"replays\":").endsWith("}}");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
         ResultSet tables = c.getMetaData().getTables(null, null, "%", new String[] {"TABLE"})) {
      List<String> names = new ArrayList<>();
      while (tables.next()) {
        names.add(tables.getString("TABLE_NAME"));
      }
      assertThat(names).containsExactly("once_records");
    }
  }

  @Test
  void onPostgres() {
    String url = System.getenv("ONCE_POSTGRES_URL");
    Run run = bench("--store", url != null && !url.isBlank() ? url
        : dev.once.testkit.TestPostgres.jdbcUrl());

    assertBothSidesOfBothWorkloadsRan(run);
    assertThat(run.results()).extracting(BenchCommand.Measurement::variant).contains("tx");
    // The cost of an operation next to its rate: CPU on both sides of the connection, and WAL.
    assertThat(run.results()).allSatisfy(m -> {
      assertThat(m.jvmCpuMicros()).as("JVM CPU of %s", m).isPositive();
      assertThat(m.serverCpuMicros()).as("server CPU of %s", m).isPositive();
    });
    assertThat(run.results()).filteredOn(m -> m.workload().equals("new keys"))
        .allSatisfy(m -> assertThat(m.walBytesPerOperation()).as("WAL of %s", m)
            .isGreaterThan(100));
    assertThat(run.out()).contains("CPU µs/op", "WAL B/op", "postgres processes on this host");
  }

  @Test
  void onRedisTheServersCpuIsReadFromInfo() throws Exception {
    try (var server = dev.once.redis.testing.RedisServerProcess.start()) {
      Run run = bench("--store", server.uri());

      assertBothSidesOfBothWorkloadsRan(run);
      assertThat(run.results()).allSatisfy(m -> {
        assertThat(m.serverCpuMicros()).as("server CPU of %s", m).isPositive();
        assertThat(m.walBytesPerOperation()).isEqualTo(-1);
      });
      assertThat(run.out()).contains("Redis INFO cpu");
    }
  }

  /**
   * Each comparison names its keys anew: on Redis, where the raw side's keys outlive the
   * comparison, the second one's used to be the first's ("bench keys must be new").
   */
  @Test
  void severalThreadCountsOnRedisEachWriteKeysOfTheirOwn() {
    try (var server = dev.once.redis.testing.RedisServerProcess.start()) {
      Run run = bench("--store", server.uri(), "--threads", "1");

      assertThat(run.exitCode()).as(run.err()).isZero();
      assertThat(run.results()).hasSize(8);
    }
  }

  @Test
  void coalesceZeroAddsOnceWithCoalescingOffAndNAddsCoalescedSides() {
    Run off = bench("--store", "memory:", "--coalesce", "0");
    assertThat(off.exitCode()).as(off.err()).isZero();
    assertThat(off.results()).extracting(m -> m.workload() + "/" + m.variant())
        .containsExactly("new keys/raw", "new keys/once", "new keys/alone", "replays/raw",
            "replays/once", "replays/alone");
    assertThat(off.out()).contains("coalesceStoreCalls(0): every call alone");

    Run on = bench("--store", "memory:", "--coalesce", "2");
    assertThat(on.exitCode()).as(on.err()).isZero();
    assertThat(on.results()).extracting(m -> m.variant()).contains("coalesced")
        .doesNotContain("alone");
    assertThat(on.out()).contains("coalesceStoreCalls(2)");
  }

  @Test
  void severalThreadCountsRunTheWholeComparisonForEach() {
    Run run = bench("--store", "memory:", "--threads", "1,3");

    assertThat(run.exitCode()).as(run.err()).isZero();
    // QUICK's --threads 2, then 1 and 3: three comparisons, one after the other.
    assertThat(run.out()).contains("2 threads", "1 threads", "3 threads");
    assertThat(run.results()).hasSize(12);
    assertThat(run.results()).allSatisfy(m -> {
      assertThat(m.jvmCpuMicros()).isPositive();
      assertThat(m.serverCpuMicros()).as("nothing to read of an in-memory store").isEqualTo(-1);
    });
  }

  @Test
  void redisCpuIsReadFromInfoCpu() {
    assertThat(ServerCounters.redisCpuNanos("# CPU\r\nused_cpu_sys:1.500000\r\n"
        + "used_cpu_user:2.250000\r\nused_cpu_sys_children:0.000000\r\n"))
        .isEqualTo(3_750_000_000L);
    assertThat(ServerCounters.redisCpuNanos("# CPU\r\n")).isEqualTo(-1);
    assertThat(BenchCommand.jdbcHost("jdbc:postgresql://127.0.0.1:5432/test")).isEqualTo(
        "127.0.0.1");
    assertThat(BenchCommand.jdbcHost("jdbc:postgresql://[::1]:5432/test")).isEqualTo("[::1]");
    assertThat(BenchCommand.jdbcHost("jdbc:postgresql:test")).isEmpty();
  }

  @Test
  void aBusinessWriteIsDebitedOncePerNewKeyOnEverySide(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("once.db");

    Run run = bench("--store", "sqlite:" + file, "--business-write");

    // The command itself fails when the debits committed differ from the operations returned.
    assertBothSidesOfBothWorkloadsRan(run);
    assertThat(run.out()).contains("a business write (debit) in every new key",
        "UPDATE + debit", "(debit in autocommit)", "(debit inside)");
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
         ResultSet tables = c.getMetaData().getTables(null, null, "%", new String[] {"TABLE"})) {
      List<String> names = new ArrayList<>();
      while (tables.next()) {
        names.add(tables.getString("TABLE_NAME"));
      }
      assertThat(names).doesNotContain(BenchCommand.ACCOUNTS_TABLE, BenchCommand.ONCE_TABLE,
          BenchCommand.RAW_TABLE);
    }
  }

  @Test
  void aBusinessWriteNeedsASqlStore() {
    Run run = bench("--store", "memory:", "--business-write");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err().strip()).isEqualTo("once bench: --business-write needs a SQL store "
        + "(sqlite:, postgres:, mariadb:), not memory:");
  }

  @ParameterizedTest
  @ValueSource(strings = {"--threads=0", "--rounds=0", "--duration=0s", "--duration=abc",
      "--warmup=-1s", "--duration=11m", "--store=nope:"})
  void badOptionsAreOneLineErrors(String option) {
    Run run = bench(option);

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).startsWith("once bench: ").doesNotContain("\tat ");
    assertThat(run.err().strip()).doesNotContain("\n");
  }
}
