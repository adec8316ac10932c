package dev.once.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.cli.store.StoreUris;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code once demo} on the persistent stores: a SQLite file (the default) and the PostgreSQL
 * server at {@code ONCE_POSTGRES_URL} (a JDBC URL) if set, else an embedded PostgreSQL started
 * for the test run, so a fresh machine needs nothing installed), and the one-line errors of stores that cannot
 * be used. An unreachable PostgreSQL fails the test, it is never skipped.
 */
class DemoStoresTest {

  /** Small and quick, with takeovers and zombies all the same. */
  private static final String[] SMALL = {"--seed", "7", "--lease-ms", "40", "--crash-rate", "0.1"};

  @TempDir
  Path tmp;

  private static CommandRun demo(String store) {
    return demo(store, 300);
  }

  private static CommandRun demo(String store, int events) {
    String[] args = new String[4 + SMALL.length];
    args[0] = "demo";
    args[1] = "--store=" + store;
    args[2] = "--events";
    args[3] = Integer.toString(events);
    System.arraycopy(SMALL, 0, args, 4, SMALL.length);
    return CommandRun.run(args);
  }

  private static void assertOnceHeld(CommandRun run, int events) {
    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.err()).isEmpty();
    DemoResult.Figures without = run.result().withoutOnce();
    DemoResult.Figures with = run.result().withOnce();
    assertThat(without.doubleCharges()).isPositive();
    assertThat(with.doubleCharges()).isZero();
    assertThat(with.lostEvents()).isZero();
    assertThat(with.unacknowledged()).isZero();
    assertThat(with.zombieWritesAccepted()).isZero();
    // Every event charged in this run: nothing replayed from an earlier run's records.
    assertThat(with.sideEffects()).isEqualTo(events);
    // The receipt step mailed every event once, whatever the crashes.
    assertThat(with.receipts().inStep()).isEqualTo(new DemoResult.Mails(events, 0, 0));
  }

  @Test
  void onASqliteFileOnceChargesEveryEventOnceAndKeepsTheRecords() {
    Path file = tmp.resolve("nested/dirs/once.db");
    Set<Thread> before = Thread.getAllStackTraces().keySet();

    CommandRun run = demo("sqlite:" + file);

    assertOnceHeld(run, 300);
    assertThat(run.scope()).matches("payments\\.charge\\.[a-z0-9]{8}");
    assertThat(run.out()).contains("store sqlite:" + file,
        "Records: SQLite file " + file + ", table once_records, scope " + run.scope(),
        "Records kept in " + file + " under scope " + run.scope());
    assertThat(file).isRegularFile();
    try (JdbcStore store = JdbcStore.sqlite(file)) {
      Optional<IdempotencyRecord> record = store.find(IdempotencyKey.of(run.scope(), "evt-001"));
      assertThat(record).get().extracting(IdempotencyRecord::status).isEqualTo(Status.COMPLETED);
    }
    assertNoThreadLeftBehind(before);
  }

  /**
   * Issue 16 on a SQLite file: the receipt step's start and result are journaled in the file,
   * under the fencing token, and a takeover reconciles instead of mailing again; the mail sent
   * inside the work doubles under the same crashes.
   */
  @Test
  void onASqliteFileTheReceiptStepNeverMailsTwiceWhereTheWorkDoes() {
    CommandRun run = CommandRun.run("demo", "--store=sqlite:" + tmp.resolve("steps.db"),
        "--events", "300", "--seed", "13", "--crash-rate", "0.2", "--lease-ms", "40");

    assertOnceHeld(run, 300);
    DemoResult.Receipts receipts = run.result().withOnce().receipts();
    assertThat(receipts.inWork().doubled()).isPositive();
    assertThat(receipts.keyIgnored()).isEqualTo(receipts.inWork());
    assertThat(receipts.inStep().doubled()).isZero();
    assertThat(receipts.reconciled()).isPositive();
  }

  @Test
  void twoRunsOnTheSameFileEachStartClean() {
    String store = "sqlite:" + tmp.resolve("once.db");

    CommandRun first = demo(store);
    CommandRun second = demo(store);

    assertOnceHeld(first, 300);
    assertOnceHeld(second, 300);
    assertThat(second.scope()).isNotEqualTo(first.scope());
  }

  @Test
  void recordsPastTheirRetentionArePurgedAtStart() {
    Path file = tmp.resolve("once.db");
    IdempotencyKey old = IdempotencyKey.of("payments.charge.earlier1", "evt-001");
    try (JdbcStore store = JdbcStore.sqlite(file)) {
      store.createSchema();
      Clock twoDaysAgo = Clock.fixed(Instant.now().minus(Duration.ofDays(2)), ZoneOffset.UTC);
      Once.builder(store).clock(twoDaysAgo).build()
          .call(old, Fingerprint.of("x"), Codecs.utf8(), attempt -> "ch_1");
      assertThat(store.find(old)).isPresent();
    }

    CommandRun run = demo("sqlite:" + file, 50);

    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.out()).contains("(1 expired record of earlier runs purged)");
    try (JdbcStore store = JdbcStore.sqlite(file)) {
      assertThat(store.find(old)).isEmpty();
    }
  }

  @Test
  void onPostgresOnceChargesEveryEventOnce() {
    String url = System.getenv("ONCE_POSTGRES_URL");
    String store = url != null && !url.isBlank() ? url : dev.once.testkit.TestPostgres.jdbcUrl();

    CommandRun run = demo(store, 200);

    assertOnceHeld(run, 200);
    assertThat(run.out()).contains("Records: PostgreSQL ", "table once_records");
  }

  @Test
  void anUnreachableServerIsOneLineAndExitCode2() {
    CommandRun run = demo("postgres://127.0.0.1:1/x");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).startsWith("once demo: cannot reach the store at postgres://127.0.0.1:1/x: ")
        .endsWith(System.lineSeparator());
    assertThat(run.err().strip()).doesNotContain("\n", "\r", "at dev.once", "\tat ", "Exception");
    assertThat(run.result()).isNull();
  }

  @Test
  void aPasswordIsNeverPrinted() {
    CommandRun run = demo("postgres://someone:s3cr3t@127.0.0.1:1/x");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("postgres://someone:***@127.0.0.1:1/x").doesNotContain("s3cr3t");
  }

  @Test
  void aFileThatCannotBeCreatedIsOneLineAndExitCode2() throws Exception {
    Path notADirectory = Files.writeString(tmp.resolve("plain-file"), "x");

    CommandRun run = demo("sqlite:" + notADirectory.resolve("once.db"));

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).startsWith("once demo: cannot open the store at sqlite:");
    assertThat(run.err().strip()).doesNotContain("\n", "at dev.once");
  }

  @Test
  void unsupportedAndMalformedStoresAreUsageErrors() {
    CommandRun nats = demo("nats://x");
    CommandRun empty = demo("sqlite:");

    assertThat(nats.exitCode()).isEqualTo(2);
    assertThat(nats.err().strip()).isEqualTo("once demo: store URI 'nats://x' is not supported "
        + "by this build (supported: " + StoreUris.SUPPORTED + ")");
    assertThat(empty.exitCode()).isEqualTo(2);
    assertThat(empty.err().strip()).startsWith("once demo: store URI 'sqlite:' has no file path")
        .doesNotContain("\n");
    assertThat(empty.out()).isEmpty();
  }

  /**
   * The demo's threads (it names every thread it starts "once-…") are gone once the command
   * returns. Only those: servers that earlier test classes started in this JVM (DynamoDB Local's
   * cached pools) create "pool-N-thread-M" threads whenever they have work, which under load
   * happened during a demo and failed this check although the demo left nothing behind.
   */
  private static void assertNoThreadLeftBehind(Set<Thread> before) {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    Set<String> left;
    do {
      left = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> !before.contains(t) && t.isAlive())
          .filter(t -> t.getName().startsWith("once-"))
          .map(Thread::getName)
          .collect(Collectors.toSet());
      if (left.isEmpty()) {
        return;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    } while (System.nanoTime() < deadline);
    assertThat(left).as("threads started by the demo and still alive").isEmpty();
  }
}
