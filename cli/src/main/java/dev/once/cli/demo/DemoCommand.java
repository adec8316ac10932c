package dev.once.cli.demo;

import dev.once.Maintenance;
import dev.once.Once;
import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreOption;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.cli.support.Latencies;
import dev.once.cli.support.HeldLog;
import dev.once.cli.support.Progress;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once demo}: payment events delivered at least once, with duplicates and crashes between
 * the effects and the acknowledgement, consumed by concurrent workers without and then with Once.
 * Each event is charged (a gateway that deduplicates by idempotency key) and its receipt mailed
 * (a mailer with no idempotency) three ways, to show what a durable step adds. Prints what each
 * run charged and mailed; exits 0 when Once charged every event exactly once and its step mailed
 * every receipt exactly once.
 *
 * <p>The records go to the store of {@code --store}, by default a SQLite file under the current
 * directory. The demo owns its data: it creates the table if missing (on any store), purges the
 * records whose retention passed, and keys each run under a scope of its own
 * ({@code payments.charge.<run id>}), so that an earlier run's records in the same file never
 * replay into a new one. The records stay for inspection until a later run purges them.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, version = DemoCommand.VERSION,
    sortOptions = false, showDefaultValues = true,
    header = "Charges payments delivered at least once, without and with Once.",
    description = {
        "Runs a concurrent at-least-once payments scenario twice over the same seeded delivery "
            + "plan: without Once (charge on every delivery) and with Once.",
        "Every event also mails a receipt through a mailer with no idempotency, three ways: in "
            + "the work, with attempt.key() (which the mailer ignores), and in a durable Step "
            + "reconciled by its step key; only the last never mails twice.",
        "Each run keys its payments under a scope of its own; its records stay in the store, "
            + "and runs purge those older than the 24 h retention.",
        "Exit code 0 when the run with Once has no double charge, no lost event and no double "
            + "receipt from its Step, else 1; 2 for bad options or a store that cannot be used."})
public final class DemoCommand implements Callable<Integer> {

  /** The version printed by {@code --version} and in the report. */
  static final String VERSION = "0.1.0-SNAPSHOT";

  /** The report's file name, next to the database. */
  static final String REPORT_NAME = "once-demo-report.html";

  /** Pool connections beyond one per worker: purging at start, the main thread. */
  static final int SPARE_CONNECTIONS = 4;
  static final int MAX_EVENTS = 1_000_000;
  static final int MAX_WORKERS = 256;
  static final long MIN_LEASE_MS = 10;
  static final long MAX_LEASE_MS = 10_000;

  @Spec
  CommandSpec spec;

  @Mixin
  StoreOption store;

  @Option(names = "--events", defaultValue = "2000", paramLabel = "N",
      description = "Payment events to publish (1-" + MAX_EVENTS + ").")
  int events;

  @Option(names = "--duplicates", defaultValue = "0.3", paramLabel = "SHARE",
      description = "Share of events the broker delivers more than once (from 0.0 to 1.0).")
  double duplicates;

  @Option(names = "--crash-rate", defaultValue = "0.05", paramLabel = "SHARE",
      description = "Share of deliveries after which the worker crashes: after the charge and "
          + "the receipt, before the acknowledgement (from 0.0 to 1.0).")
  double crashRate;

  @Option(names = "--workers", defaultValue = "4", paramLabel = "N",
      description = "Concurrent consumer threads (1-" + MAX_WORKERS + ").")
  int workers;

  @Option(names = "--seed", defaultValue = "42", paramLabel = "N",
      description = "Seed of the delivery plan: same seed, same duplicates and crashes.")
  long seed;

  @Option(names = "--lease-ms", defaultValue = "200", paramLabel = "MS",
      description = "How long a claim is honoured; a crashed worker's claim is taken over after "
          + "it (" + MIN_LEASE_MS + "-" + MAX_LEASE_MS + ").")
  long leaseMs;

  @Option(names = "--report", paramLabel = "FILE",
      description = "Where to write the HTML report (default: once-demo-report.html next to a "
          + "SQLite file, else under ./once-data/).")
  Path reportFile;

  @Option(names = "--no-report", description = "Write no HTML report.")
  boolean noReport;

  private DemoResult lastResult;
  private String lastScope;
  private Path lastReport;

  @Override
  public Integer call() throws InterruptedException {
    StoreUri uri = validate();
    String scope = PaymentsScenario.SCOPE + "." + runId();
    PrintWriter out = spec.commandLine().getOut();
    // Opened before anything is printed: a store that cannot be reached is one line on stderr.
    try (OpenStore opened = store.open(workers + SPARE_CONNECTIONS)) {
      long purged;
      try {
        // The demo owns its data: it may create the table, IF NOT EXISTS, on any store.
        opened.createSchema();
        // Bounds the growth of a file that outlives the run, with the real clock.
        purged = Maintenance.of(opened.store()).purgeExpired();
      } catch (StoreUnavailableException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN,
            StoreUris.cannotOpenMessage(uri, StoreUris.causeMessage(e)));
      }
      out.printf(Locale.ROOT,
          "Payments demo: %d events, %s redelivered, %s of deliveries crash after the charge and "
              + "the receipt, before the ack, %d workers, seed %d, lease %d ms, store %s%n",
          events, percent(duplicates), percent(crashRate), workers, seed, leaseMs, uri.display());
      out.printf(Locale.ROOT, "Records: %s, scope %s%s%n%n", opened.describe(), scope,
          purged == 0 ? "" : " (" + purged + " expired record" + (purged == 1 ? "" : "s")
              + " of earlier runs purged)");
      out.flush();

      DeliveryPlan plan = DeliveryPlan.generate(events, duplicates, crashRate, seed);
      DemoResult result;
      try {
        PaymentsScenario scenario = new PaymentsScenario(plan, workers,
            Duration.ofMillis(leaseMs), opened.store(), scope);
        // Counted in messages (every copy of every event), as the broker acknowledges them.
        DemoResult.Figures without;
        try (Progress progress = Progress.start("without Once", scenario.messages(),
            scenario::acknowledged)) {
          without = scenario.runWithoutOnce();
        }
        DemoResult.Figures with;
        // The engine's warnings (a worker that stalled past its lease on a loaded machine) are
        // held back while the progress line is drawn, then told in one line.
        try (HeldLog held = HeldLog.holdBack()) {
          try (Progress progress = Progress.start("with Once   ", scenario.messages(),
              scenario::acknowledged)) {
            with = scenario.runWithOnce();
          }
          engineWarnings = held.summary();
        }
        result = new DemoResult(without, with);
      } catch (StoreUnavailableException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "the store at " + uri.display()
            + " failed during the run: " + StoreUris.causeMessage(e));
      }
      lastResult = result;
      lastScope = scope;
      report(out, result);
      if (!noReport) {
        writeReport(out, uri, result, DemoReport.RunInfo.now(VERSION, uri.display(), seed,
            String.format(Locale.ROOT, "%d events, %s redelivered, %s crash rate, %d workers, "
                + "lease %d ms", events, percent(duplicates), percent(crashRate), workers,
                leaseMs)));
      }
      if (uri.persistent()) {
        out.printf(Locale.ROOT, "Records kept in %s under scope %s; a run after the %d h "
                + "retention purges them.%n", where(uri), scope,
            Once.Builder.DEFAULT_RETENTION.toHours());
        out.flush();
      }
      return result.onceHeld() ? 0 : 1;
    }
  }

  /** What the engine logged during the run with Once, in one line; empty if nothing. */
  private String engineWarnings = "";

  private void report(PrintWriter out, DemoResult result) {
    printTable(out, result);
    if (!engineWarnings.isEmpty()) {
      out.printf(Locale.ROOT, "(%s)%n", engineWarnings);
    }
    if (result.withOnce().takeovers() > 0) {
      // Without this, the lower figure reads as Once's overhead; it is mostly recovery time.
      out.printf(Locale.ROOT, "(throughput with Once includes waiting out the %d ms lease of "
          + "crashed workers before taking over)%n", leaseMs);
    }
    DemoResult.Receipts receipts = result.withOnce().receipts();
    out.printf(Locale.ROOT, "%nOnce: %d double charges (without: %d)%n",
        result.withOnce().doubleCharges(), result.withoutOnce().doubleCharges());
    out.printf(Locale.ROOT, "Receipts through a mailer with no idempotency, events mailed twice "
            + "or more with Once: %d with the mail in the work, %d with attempt.key() (ignored "
            + "by the mailer), %d with the mail in a Step reconciled by its step key%n",
        receipts.inWork().doubled(), receipts.keyIgnored().doubled(),
        receipts.inStep().doubled());
    out.flush();
    if (result.withOnce().zombieWritesAccepted() > 0 || result.withOnce().unacknowledged() > 0
        || receipts.inStep().never() > 0) {
      PrintWriter err = spec.commandLine().getErr();
      err.printf(Locale.ROOT, "once demo: with Once, %d zombie writes were accepted, %d "
              + "messages left unacknowledged and %d receipts never mailed by the step; all must "
              + "be 0%n", result.withOnce().zombieWritesAccepted(),
          result.withOnce().unacknowledged(), receipts.inStep().never());
      err.flush();
    }
  }

  private void writeReport(PrintWriter out, StoreUri uri, DemoResult result,
      DemoReport.RunInfo info) {
    Path file = reportFile != null ? reportFile
        : (uri.file() != null ? uri.file().resolveSibling(REPORT_NAME)
            : Path.of(StoreOption.DEFAULT_DIRECTORY, REPORT_NAME));
    file = file.toAbsolutePath().normalize();
    try {
      DemoReport.write(file, "once demo: payments delivered at least once", info, rows(result),
          result);
      lastReport = file;
      out.printf(Locale.ROOT, "Report: %s%n", file.toUri());
    } catch (IOException e) {
      // The figures are printed already; a report that cannot be written is worth a line only.
      spec.commandLine().getErr().printf(Locale.ROOT, "once demo: could not write the report "
          + "%s (%s)%n", file, e.getMessage());
      spec.commandLine().getErr().flush();
    }
    out.flush();
  }

  private static String where(StoreUri uri) {
    return uri.file() != null ? uri.file().toString() : uri.display();
  }

  /** Eight random characters from [a-z0-9]: a scope suffix of this run's own. */
  private static String runId() {
    return Long.toString(ThreadLocalRandom.current().nextLong(36L * 36 * 36 * 36 * 36 * 36 * 36,
        36L * 36 * 36 * 36 * 36 * 36 * 36 * 36), 36);
  }

  /** The figures of the last run, for tests; null before the first. */
  DemoResult lastResult() {
    return lastResult;
  }

  /** Where the last run wrote its report, for tests; null if it wrote none. */
  Path lastReport() {
    return lastReport;
  }

  /** The scope of the last run's keys, for tests; null before the first. */
  String lastScope() {
    return lastScope;
  }

  /** Checks the options; the store URI is parsed, not opened. */
  private StoreUri validate() {
    StoreUri uri = store.uri();
    if (events < 1 || events > MAX_EVENTS) {
      throw invalid("--events must be between 1 and " + MAX_EVENTS + ", was " + events);
    }
    checkShare("--duplicates", duplicates);
    checkShare("--crash-rate", crashRate);
    if (workers < 1 || workers > MAX_WORKERS) {
      throw invalid("--workers must be between 1 and " + MAX_WORKERS + ", was " + workers);
    }
    if (leaseMs < MIN_LEASE_MS || leaseMs > MAX_LEASE_MS) {
      throw invalid("--lease-ms must be between " + MIN_LEASE_MS + " and " + MAX_LEASE_MS
          + ", was " + leaseMs);
    }
    return uri;
  }

  private void checkShare(String option, double value) {
    // Written so that NaN fails too.
    if (!(value >= 0.0 && value <= 1.0)) {
      throw invalid(option + " must be between 0.0 and 1.0, was " + value);
    }
  }

  private ParameterException invalid(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /**
   * The audit table, rows that only mean something with Once shown as "-" without it, and a
   * section heading as a row without values.
   */
  static List<DemoReport.Row> rows(DemoResult result) {
    DemoResult.Figures without = result.withoutOnce();
    DemoResult.Figures with = result.withOnce();
    List<Row> rows = List.of(
        new Row("events", f -> count(f.events()), false),
        new Row("deliveries (incl. redeliveries)", f -> count(f.deliveries()), false),
        new Row("worker crashes (after the effects, before ack)", f -> count(f.crashes()), false),
        new Row("side effects executed (money charged)", f -> count(f.sideEffects()), false),
        new Row("double charges", f -> count(f.doubleCharges()), false),
        new Row("lost events", f -> count(f.lostEvents()), false),
        new Row("duplicates replayed", f -> count(f.replayed()), true),
        new Row("in-progress answers", f -> count(f.inProgress()), true),
        new Row("takeovers (lease passed, token+1)", f -> count(f.takeovers()), true),
        new Row("re-charges deduplicated by gateway", f -> count(f.gatewayDeduplicated()), true),
        new Row("fenced zombies", f -> count(f.fencedZombies()), true),
        new Row(RECEIPTS_HEADING, null, false),
        new Row(RECEIPT_IN_WORK, f -> count(f.receipts().inWork().doubled()), false),
        new Row(RECEIPT_KEY_IGNORED, f -> count(f.receipts().keyIgnored().doubled()), true),
        new Row(RECEIPT_IN_STEP, f -> count(f.receipts().inStep().doubled()), true),
        new Row("     step started, mail found by key: not re-sent",
            f -> count(f.receipts().reconciled()), true),
        new Row("     step journaled, result replayed: not re-sent",
            f -> count(f.receipts().replayed()), true),
        new Row("throughput (deliveries/s)",
            f -> String.format(Locale.ROOT, "%.0f", f.throughput()), false),
        new Row("added latency p50 / p99 (ms)", f -> millis(f.addedLatency(), 50) + " / "
            + millis(f.addedLatency(), 99), true));
    return rows.stream().map(r -> r.value() == null ? new DemoReport.Row(r.label(), "", "")
        : new DemoReport.Row(r.label(), r.onceOnly() ? "-" : r.value().apply(without),
            r.value().apply(with))).toList();
  }

  /** The section of the audit table on the receipts, and its three variants' rows. */
  static final String RECEIPTS_HEADING = "receipts mailed twice (mailer has no idempotency):";
  static final String RECEIPT_IN_WORK = "  1. mail sent in the work";
  static final String RECEIPT_KEY_IGNORED = "  2. attempt.key() sent, mailer ignores it";
  static final String RECEIPT_IN_STEP = "  3. mail in a Step, reconciled by step key";

  private static String millis(Latencies.Summary latencies, double percentile) {
    return latencies == null ? "-"
        : String.format(Locale.ROOT, "%.2f", latencies.percentile(percentile) / 1e6);
  }

  private static void printTable(PrintWriter out, DemoResult result) {
    List<DemoReport.Row> rows = rows(result);
    int labelWidth = rows.stream().mapToInt(r -> r.label().length()).max().orElse(0);
    String format = "%-" + labelWidth + "s  %14s  %13s%n";
    out.printf(Locale.ROOT, format, "", "without Once", "with Once");
    out.printf(Locale.ROOT, format, "-".repeat(labelWidth), "-".repeat(14), "-".repeat(13));
    for (DemoReport.Row row : rows) {
      if (row.heading()) {
        out.printf(Locale.ROOT, "%s%n", row.label());
      } else {
        out.printf(Locale.ROOT, format, row.label(), row.without(), row.with());
      }
    }
  }

  private static String count(long n) {
    return Long.toString(n);
  }

  private static String percent(double share) {
    // Through BigDecimal: 0.3 * 100 is 30.000000000000004 in double arithmetic.
    return BigDecimal.valueOf(share).movePointRight(2).stripTrailingZeros().toPlainString() + "%";
  }

  private record Row(String label, Function<DemoResult.Figures, String> value, boolean onceOnly) {}
}
