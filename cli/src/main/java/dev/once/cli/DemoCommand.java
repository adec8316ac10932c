package dev.once.cli;

import java.io.PrintWriter;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once demo}: payment events delivered at least once, with duplicates and crashes between
 * charge and acknowledgement, consumed by concurrent workers without and then with Once. Prints
 * what each run charged; exits 0 when Once charged every event exactly once.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    sortOptions = false, showDefaultValues = true,
    header = "Charges payments delivered at least once, without and with Once.",
    description = {
        "Runs a concurrent at-least-once payments scenario twice over the same seeded delivery "
            + "plan: without Once (charge on every delivery) and with Once.",
        "Exit code 0 when the run with Once has no double charge and no lost event, else 1; "
            + "2 for bad options."})
final class DemoCommand implements Callable<Integer> {

  static final String MEMORY_STORE = "memory:";
  static final int MAX_EVENTS = 1_000_000;
  static final int MAX_WORKERS = 256;
  static final long MIN_LEASE_MS = 10;
  static final long MAX_LEASE_MS = 10_000;

  @Spec
  CommandSpec spec;

  @Option(names = "--store", defaultValue = MEMORY_STORE, paramLabel = "URI",
      description = "Where Once keeps its records. This build supports memory: only.")
  String store;

  @Option(names = "--events", defaultValue = "2000", paramLabel = "N",
      description = "Payment events to publish (1-" + MAX_EVENTS + ").")
  int events;

  @Option(names = "--duplicates", defaultValue = "0.3", paramLabel = "SHARE",
      description = "Share of events the broker delivers more than once (from 0.0 to 1.0).")
  double duplicates;

  @Option(names = "--crash-rate", defaultValue = "0.05", paramLabel = "SHARE",
      description = "Share of deliveries after which the worker crashes: after the charge, "
          + "before the acknowledgement (from 0.0 to 1.0).")
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

  private DemoResult lastResult;

  @Override
  public Integer call() throws InterruptedException {
    validate();
    PrintWriter out = spec.commandLine().getOut();
    out.printf(Locale.ROOT,
        "Payments demo: %d events, %s redelivered, %s of deliveries crash between charge and ack, "
            + "%d workers, seed %d, lease %d ms, store %s%n%n",
        events, percent(duplicates), percent(crashRate), workers, seed, leaseMs, store);
    out.flush();

    DeliveryPlan plan = DeliveryPlan.generate(events, duplicates, crashRate, seed);
    DemoResult result = new PaymentsScenario(plan, workers, Duration.ofMillis(leaseMs)).run();
    lastResult = result;

    printTable(out, result);
    if (result.withOnce().takeovers() > 0) {
      // Without this, the lower figure reads as Once's overhead; it is mostly recovery time.
      out.printf(Locale.ROOT, "(throughput with Once includes waiting out the %d ms lease of "
          + "crashed workers before taking over)%n", leaseMs);
    }
    out.printf(Locale.ROOT, "%nOnce: %d double charges (without: %d)%n",
        result.withOnce().doubleCharges(), result.withoutOnce().doubleCharges());
    out.flush();
    if (result.withOnce().zombieWritesAccepted() > 0 || result.withOnce().unacknowledged() > 0) {
      PrintWriter err = spec.commandLine().getErr();
      err.printf(Locale.ROOT, "once demo: with Once, %d zombie writes were accepted and %d "
              + "messages left unacknowledged; both must be 0%n",
          result.withOnce().zombieWritesAccepted(), result.withOnce().unacknowledged());
      err.flush();
    }
    return result.onceHeld() ? 0 : 1;
  }

  /** The figures of the last run, for tests; null before the first. */
  DemoResult lastResult() {
    return lastResult;
  }

  private void validate() {
    if (!MEMORY_STORE.equals(store)) {
      throw invalid("unsupported store URI '" + store + "', this build supports " + MEMORY_STORE);
    }
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

  private static void printTable(PrintWriter out, DemoResult result) {
    DemoResult.Figures without = result.withoutOnce();
    DemoResult.Figures with = result.withOnce();
    // Rows that only mean something with Once are shown as "-" without it.
    List<Row> rows = List.of(
        new Row("events", f -> count(f.events()), false),
        new Row("deliveries (incl. redeliveries)", f -> count(f.deliveries()), false),
        new Row("worker crashes (after charge, before ack)", f -> count(f.crashes()), false),
        new Row("side effects executed (money charged)", f -> count(f.sideEffects()), false),
        new Row("double charges", f -> count(f.doubleCharges()), false),
        new Row("lost events", f -> count(f.lostEvents()), false),
        new Row("duplicates replayed", f -> count(f.replayed()), true),
        new Row("in-progress answers", f -> count(f.inProgress()), true),
        new Row("takeovers (lease passed, token+1)", f -> count(f.takeovers()), true),
        new Row("re-charges deduplicated by gateway", f -> count(f.gatewayDeduplicated()), true),
        new Row("fenced zombies", f -> count(f.fencedZombies()), true),
        new Row("throughput (deliveries/s)",
            f -> String.format(Locale.ROOT, "%.0f", f.throughput()), false));
    int labelWidth = rows.stream().mapToInt(r -> r.label().length()).max().orElse(0);
    String format = "%-" + labelWidth + "s  %14s  %11s%n";
    out.printf(Locale.ROOT, format, "", "without Once", "with Once");
    out.printf(Locale.ROOT, format, "-".repeat(labelWidth), "-".repeat(14), "-".repeat(11));
    for (Row row : rows) {
      out.printf(Locale.ROOT, format, row.label(),
          row.onceOnly() ? "-" : row.value().apply(without), row.value().apply(with));
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
