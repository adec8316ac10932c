package dev.once.cli.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.cli.store.StoreUris;
import dev.once.cli.support.Latencies;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The scenario and the command line, on the store in memory (fast, and no file in the working
 * directory); the persistent stores are in {@link DemoStoresTest}.
 */
class DemoCommandTest {

  private record Run(int exitCode, String out, String err, DemoResult result) {}

  /** The demo on the store in memory, unless the arguments name another. */
  private static Run run(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    if (all.size() > 0 && all.get(0).equals("demo")
        && all.stream().noneMatch(a -> a.startsWith("--store"))) {
      all.add("--store=memory:");
    }
    CommandRun run = CommandRun.run(all.toArray(String[]::new));
    return new Run(run.exitCode(), run.out(), run.err(), run.result());
  }

  @Test
  void onceChargesEveryEventExactlyOnceWhereThePlainConsumerDoubleCharges() {
    Run run = run("demo", "--events", "300", "--seed", "7", "--lease-ms", "40");

    assertThat(run.exitCode()).as(run.err()).isZero();
    DemoResult.Figures without = run.result().withoutOnce();
    DemoResult.Figures with = run.result().withOnce();
    assertThat(without.doubleCharges()).isPositive();
    assertThat(without.lostEvents()).isZero();
    assertThat(with.doubleCharges()).isZero();
    assertThat(with.lostEvents()).isZero();
    assertThat(with.sideEffects()).isEqualTo(300);
    assertThat(with.replayed()).isPositive();
    assertThat(with.unacknowledged()).isZero();
    assertThat(run.out()).contains("without Once", "with Once", "double charges", "lost events",
        "fenced zombies", "throughput (deliveries/s)",
        "Once: 0 double charges (without: " + without.doubleCharges() + ")");
    assertThat(run.err()).isEmpty();
  }

  @Test
  void crashedWorkersAreTakenOverAndPausedOnesAreFenced() {
    Run run = run("demo", "--events", "300", "--seed", "11", "--crash-rate", "0.3",
        "--lease-ms", "30", "--workers", "8");

    assertThat(run.exitCode()).as(run.err()).isZero();
    DemoResult.Figures with = run.result().withOnce();
    assertThat(with.crashes()).isEqualTo(run.result().withoutOnce().crashes()).isPositive();
    assertThat(with.takeovers()).isPositive();
    assertThat(with.inProgress()).isPositive();
    // Every takeover charges again under the crashed worker's downstream key.
    assertThat(with.gatewayDeduplicated()).isEqualTo(with.takeovers());
    assertThat(with.fencedZombies()).isPositive();
    assertThat(with.zombieWritesAccepted()).isZero();
    assertThat(with.doubleCharges()).isZero();
    assertThat(with.sideEffects()).isEqualTo(300);
  }

  /**
   * Issue 16: a receipt mailer with no idempotency, mailed three ways by the same workers with the
   * same crashes. Inside the work it doubles on every takeover, with {@code attempt.key()} too
   * (the mailer ignores it); in a Step reconciled by its step key, never.
   */
  @Test
  void aStepReconciledByItsStepKeyNeverMailsTwiceWhereTheWorkDoes() {
    Run run = run("demo", "--events", "300", "--seed", "13", "--crash-rate", "0.2",
        "--lease-ms", "30");

    assertThat(run.exitCode()).as(run.err()).isZero();
    DemoResult.Receipts without = run.result().withoutOnce().receipts();
    DemoResult.Figures with = run.result().withOnce();
    DemoResult.Receipts receipts = with.receipts();
    // 1. the mail inside the work: the takeover runs the work again.
    assertThat(receipts.inWork().doubled()).isPositive();
    // 2. attempt.key() changes nothing for a downstream that does not deduplicate by it.
    assertThat(receipts.keyIgnored()).isEqualTo(receipts.inWork());
    // 3. the durable step: the takeover finds it started, finds the mail and sends none.
    assertThat(receipts.inStep().doubled()).isZero();
    assertThat(receipts.inStep().never()).isZero();
    assertThat(receipts.inStep().sent()).isEqualTo(300);
    assertThat(receipts.reconciled()).isPositive();
    assertThat(receipts.reconciled() + receipts.replayed()).isLessThanOrEqualTo(with.takeovers());
    // Every takeover re-ran the work: the charge deduplicated by the gateway, the mail not.
    assertThat(receipts.inWork().sent() - 300).isEqualTo(with.takeovers());
    assertThat(with.doubleCharges()).isZero();
    // Without Once the handler mails on every delivery, as it charges.
    assertThat(without.inWork().doubled()).isEqualTo(run.result().withoutOnce().doubleCharges());
    assertThat(without.keyIgnored()).isNull();
    assertThat(without.inStep()).isNull();
    assertThat(run.out()).contains(DemoCommand.RECEIPTS_HEADING,
        "Receipts through a mailer with no idempotency, events mailed twice or more with Once: "
            + receipts.inWork().doubled() + " with the mail in the work, "
            + receipts.inWork().doubled() + " with attempt.key() (ignored by the mailer), 0 with "
            + "the mail in a Step reconciled by its step key")
        .containsPattern("(?m)^  3\\. mail in a Step, reconciled by step key +- +0$")
        .containsPattern("(?m)^  1\\. mail sent in the work +" + without.inWork().doubled()
            + " +" + receipts.inWork().doubled() + "$");
  }

  @Test
  void withoutDuplicatesOrCrashesNobodyDoubleCharges() {
    Run run = run("demo", "--events", "300", "--duplicates", "0", "--crash-rate", "0");

    assertThat(run.exitCode()).isZero();
    for (DemoResult.Figures figures : new DemoResult.Figures[] {
        run.result().withoutOnce(), run.result().withOnce()}) {
      assertThat(figures.deliveries()).isEqualTo(300);
      assertThat(figures.sideEffects()).isEqualTo(300);
      assertThat(figures.doubleCharges()).isZero();
      assertThat(figures.lostEvents()).isZero();
      assertThat(figures.receipts().inWork()).isEqualTo(new DemoResult.Mails(300, 0, 0));
    }
    assertThat(run.result().withOnce().receipts().inStep())
        .isEqualTo(new DemoResult.Mails(300, 0, 0));
    assertThat(run.result().withOnce().receipts().reconciled()).isZero();
  }

  @Test
  void theSameSeedGivesTheSamePlan() {
    Run first = run("demo", "--events", "200", "--seed", "3", "--lease-ms", "20");
    Run second = run("demo", "--events", "200", "--seed", "3", "--lease-ms", "20");

    DemoResult.Figures a = first.result().withoutOnce();
    DemoResult.Figures b = second.result().withoutOnce();
    // Without Once every figure follows from the plan alone, not from thread timing.
    assertThat(b.deliveries()).isEqualTo(a.deliveries());
    assertThat(b.crashes()).isEqualTo(a.crashes());
    assertThat(b.doubleCharges()).isEqualTo(a.doubleCharges());
    assertThat(second.result().withOnce().crashes()).isEqualTo(first.result().withOnce().crashes());
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "--duplicates=1.5", "--duplicates=-0.1", "--crash-rate=2", "--crash-rate=NaN",
      "--workers=0", "--workers=1000", "--events=0", "--events=abc", "--lease-ms=0",
      "--store=nats://x", "--store=dynamodb://table", "--store=sqlite:", "--store=memory:x",
      "--store=postgres://host", "--store=postgres://u:p@host:port/db", "--store=once.db",
      "--no-such-option"})
  void badOptionsAreOneLineErrorsWithExitCode2(String option) {
    Run run = run("demo", option);

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).startsWith("once demo: ").endsWith(System.lineSeparator());
    assertThat(run.err().strip()).doesNotContain("\n", "\r", "Exception", "\tat ");
    assertThat(run.result()).isNull();
  }

  @Test
  void anUnsupportedStoreNamesTheOnesThatAre() {
    Run run = run("demo", "--store", "nats://x");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err().strip()).isEqualTo("once demo: store URI 'nats://x' is not supported by "
        + "this build (supported: " + StoreUris.SUPPORTED + ")");
  }

  @Test
  void theStoreInMemoryStillWorks() {
    Run run = run("demo", "--store", "memory:", "--events", "200", "--lease-ms", "20");

    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.result().withOnce().doubleCharges()).isZero();
    assertThat(run.result().withOnce().sideEffects()).isEqualTo(200);
    assertThat(run.out()).contains("store memory:", "Records: in memory")
        .doesNotContain("Records kept");
  }

  @Test
  void writesAnHtmlReportWithTheAuditAndBothCharts(@TempDir Path tmp) throws Exception {
    Path report = tmp.resolve("reports/demo.html");

    CommandRun run = CommandRun.run("demo", "--store", "memory:", "--events", "300",
        "--lease-ms", "20", "--report", report.toString());

    assertThat(run.exitCode()).as(run.err()).isZero();
    assertThat(run.out()).contains("Report: " + report.toUri());
    Latencies.Summary added = run.result().withOnce().addedLatency();
    // One sample per delivery Once answered: at least the one acknowledged per event, at most one
    // per delivery (crashed ones and fenced ones have none).
    assertThat(added.count()).isBetween(300, (int) run.result().withOnce().deliveries());
    assertThat(added.percentile(99)).isGreaterThanOrEqualTo(added.percentile(50)).isPositive();
    assertThat(run.out()).containsPattern("added latency p50 / p99 \\(ms\\) +- +\\d+\\.\\d\\d / "
        + "\\d+\\.\\d\\d");
    String html = Files.readString(report);
    DemoResult.Receipts receipts = run.result().withOnce().receipts();
    assertThat(html).startsWith("<!DOCTYPE html>").endsWith("</html>\n")
        .contains("<td>double charges</td><td>" + run.result().withoutOnce().doubleCharges()
            + "</td><td>0</td>", "Latency Once added per delivery", "Throughput over time",
            "<rect", "<path d=\"M")
        // The steps comparison, as a table and a chart.
        .contains("Receipts through a mailer with no idempotency",
            "<td>3. Once, mail in a Step + reconciler</td><td>300</td><td class=\"good\">0</td>",
            "<td>1. Once, mail sent in the work</td><td>" + receipts.inWork().sent() + "</td>",
            "<th class=\"section\" colspan=\"3\">" + DemoCommand.RECEIPTS_HEADING + "</th>")
        // Run metadata.
        .contains("<dt>Once</dt><dd>" + DemoCommand.VERSION + "</dd>",
            "<dt>Java</dt><dd>" + System.getProperty("java.version"), "<dt>seed</dt><dd>42</dd>",
            "<dt>store</dt><dd>memory:</dd>", "<dt>date</dt><dd>20",
            Runtime.getRuntime().availableProcessors() + " CPU")
        // One chart per run, each with its own labelled axes.
        .contains("without Once: " + run.result().withoutOnce().deliveries() + " deliveries in ",
            "with Once: " + run.result().withOnce().deliveries() + " deliveries in ",
            "deliveries/s", "time since the run started")
        .doesNotContain("NaN", "Infinity", "<script");
  }

  @Test
  void helpAndVersionExitZero() {
    Run top = run("--help");
    assertThat(top.exitCode()).isZero();
    assertThat(top.out()).contains("Usage: once", "demo");

    Run demo = run("demo", "--help");
    assertThat(demo.exitCode()).isZero();
    assertThat(demo.out()).contains("--events", "--duplicates", "--crash-rate", "--workers",
        "--seed", "--lease-ms", "--store", "sqlite:./once-data/once.db", "postgres://",
        "mariadb://");

    for (String command : List.of("schema", "inspect", "purge", "reap", "bench", "serve")) {
      Run help = run(command, "--help");
      assertThat(help.exitCode()).as(command).isZero();
      assertThat(help.out()).as(command).contains("Usage: once " + command, "--store");
    }

    Run version = run("--version");
    assertThat(version.exitCode()).isZero();
    assertThat(version.out()).contains("0.1.0-SNAPSHOT");
  }

  @Test
  void noCommandIsAUsageError() {
    Run run = run();

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err().strip()).startsWith("once: ").doesNotContain("\n");
  }
}
