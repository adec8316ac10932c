package dev.once.cli;

import dev.once.Maintenance;
import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreOption;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.cli.support.Json;
import dev.once.spi.IdempotencyStore;
import java.io.PrintWriter;
import java.time.Clock;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once purge} and {@code once reap}: one {@link Maintenance} pass in bounded batches, with
 * the count. Exit 0 on success (also when there was nothing to do), 2 for bad options or a store
 * that cannot be used. Both never create anything: a missing store or table is an error.
 */
abstract class MaintenanceCommand implements Callable<Integer> {

  static final int MAX_BATCH = 100_000;

  @Spec
  CommandSpec spec;

  @Mixin
  StoreOption store;

  @Option(names = "--batch", defaultValue = "" + Maintenance.DEFAULT_BATCH_SIZE, paramLabel = "N",
      description = "Records per statement (1-" + MAX_BATCH + "): small batches hold short locks.")
  int batch;

  @Option(names = "--json", description = "One JSON object, for scripts.")
  boolean json;

  Clock clock = Clock.systemUTC();

  /** What the pass does, e.g. "purged", and what it counts, e.g. "expired records". */
  abstract String verb();

  abstract String what();

  /** One batch of the pass: at most {@code limit} records changed, how many were. */
  abstract int batch(IdempotencyStore store, Instant now, int limit);

  @Override
  public Integer call() {
    if (batch < 1 || batch > MAX_BATCH) {
      throw new ParameterException(spec.commandLine(),
          "--batch must be between 1 and " + MAX_BATCH + ", was " + batch);
    }
    PrintWriter out = spec.commandLine().getOut();
    try (OpenStore opened = store.openExisting(1)) {
      long start = System.nanoTime();
      long count = 0;
      PrintWriter err = spec.commandLine().getErr();
      try {
        // Batch by batch, as Maintenance does, telling how far it got on a large store (stderr,
        // at most once a second, not with --json): fewer than a batch means none is left.
        Instant now = clock.instant();
        long lastReport = start;
        int changed;
        do {
          changed = batch(opened.store(), now, batch);
          count += changed;
          long nanos = System.nanoTime();
          if (!json && changed == batch && nanos - lastReport >= 1_000_000_000L) {
            err.printf(Locale.ROOT, "%s %d %s so far…%n", verb(), count, what());
            err.flush();
            lastReport = nanos;
          }
        } while (changed >= batch);
      } catch (StoreUnavailableException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "the store at "
            + opened.uri().display() + " failed: " + StoreUris.causeMessage(e));
      }
      long millis = (System.nanoTime() - start) / 1_000_000;
      if (json) {
        out.println(Json.obj().put(verb(), count).put("millis", millis)
            .put("store", opened.uri().display()));
      } else {
        out.printf(Locale.ROOT, "%s %d %s in %d ms (%s)%n", capitalized(verb()), count, what(),
            millis, opened.describe());
      }
      out.flush();
      return 0;
    }
  }

  private static String capitalized(String s) {
    return Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  @Command(name = "purge", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
      sortOptions = false, showDefaultValues = true,
      header = "Deletes the records whose retention has passed.",
      description = {
          "Deletes expired records batch by batch until none is left, and prints how many.",
          "Their keys behave as new afterwards, as they already did before the purge.",
          "Exit code 0 on success; 2 for bad options or a store that cannot be used."})
  static final class Purge extends MaintenanceCommand {
    @Override
    String verb() {
      return "purged";
    }

    @Override
    String what() {
      return "expired records";
    }

    @Override
    int batch(IdempotencyStore store, Instant now, int limit) {
      return store.purgeExpired(now, limit);
    }
  }

  @Command(name = "reap", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
      sortOptions = false, showDefaultValues = true,
      header = "Marks IN_PROGRESS records whose lease has passed as FAILED.",
      description = {
          "Turns claims whose worker died (lease passed) into FAILED records, keeping their "
              + "fencing token: the next delivery retries, and the dead worker stays fenced.",
          "Claims take over such records anyway; reaping makes them visible to inspect and "
              + "to metrics.",
          "Exit code 0 on success; 2 for bad options or a store that cannot be used."})
  static final class Reap extends MaintenanceCommand {
    @Override
    String verb() {
      return "reaped";
    }

    @Override
    String what() {
      return "stale leases";
    }

    @Override
    int batch(IdempotencyStore store, Instant now, int limit) {
      return store.reapExpiredLeases(now, limit);
    }
  }
}
