package dev.once.cli.chaos;

import static dev.once.cli.chaos.ChaosAuditTable.check;
import static dev.once.cli.chaos.ChaosAuditTable.count;
import static dev.once.cli.chaos.ChaosAuditTable.find;
import static dev.once.cli.chaos.ChaosAuditTable.perEvent;
import static dev.once.cli.chaos.ChaosAuditTable.row;

import dev.once.cli.chaos.ChaosAuditTable.Row;
import dev.once.cli.support.Json;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.io.PrintWriter;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The audit at the end of a {@code once chaos --broker} run, from what the run left behind and
 * nothing the workers said about themselves: the events the coordinator published (it knows which
 * are poison), the two downstream tables, the dead letters read back from the broker's dead-letter
 * destination, the store's records read one by one, and what the broker still holds.
 *
 * <p>What must hold, and is a violation otherwise (exit code 1):
 * <ul>
 *   <li>every event that is not poison has exactly one effect with dedupe (the downstream
 *       deduplicated on {@code Attempt.key()}) and a COMPLETED record with a SUCCESS outcome:
 *       none lost, none doubled;
 *   <li>every poison event is dead-lettered (counted from the dead-letter destination,
 *       deduplicated on its id), made no effect, and has its failure stored (a COMPLETED record
 *       with a FAILURE outcome, which its duplicates replay); no other event is dead-lettered;
 *   <li>the broker drained (nothing left unacknowledged), no worker exited by itself, every
 *       worker sent SIGTERM stopped in time.
 * </ul>
 * Effects without dedupe that ran twice are expected and reported, never a violation; so are dead
 * letters published twice for one event: dead letters are at-least-once (published before the
 * failure is stored), which the adapters' READMEs say.
 */
final class ChaosBrokerAudit {

  /** An event the coordinator published: how many messages carried it. */
  record Published(String id, boolean poison, int copies) {}

  /** Counts of the faults the coordinator injected and of the run's phases. */
  record Faults(long kills, long freezes, long terms, long termTimeouts, long restarts,
      long proxyCuts, long proxyDelays, long workersStarted, long workersExited,
      double faultSeconds, double drainSeconds, long faultStartMillis, long faultEndMillis) {}

  /** Every figure of the audit. */
  record Figures(long events, long poison, long messages, long duplicates,
      long dedupEffects, long dedupMissing, long dedupDoubled, long rawEffects, long rawRepeated,
      long reruns, long notCompleted, long poisonNotFailed, long poisonWithEffects,
      long deadLetters, long poisonDeadLettered, long poisonNotDeadLettered,
      long lettersRepeated, long wrongLetters, long lost, long unsettled,
      boolean countsUnacknowledged, Faults faults, double throughput) {}

  /** The figures and what in them breaks Once's promise. */
  record Result(Figures figures, List<String> violations) {
    boolean held() {
      return violations.isEmpty();
    }
  }

  private ChaosBrokerAudit() {}

  /**
   * Audits a finished run.
   *
   * @param letters   dead letters by event id, read from the dead-letter destination
   * @param unsettled what the broker still holds after the workers stopped
   */
  static Result audit(String runId, List<Published> events, ChaosDownstream downstream,
      Map<String, Integer> letters, IdempotencyStore store, long unsettled,
      boolean countsUnacknowledged, Faults faults) throws SQLException {
    Map<String, Integer> dedup = perEvent(downstream.connection(), "dedup_effects");
    Map<String, Integer> raw = perEvent(downstream.connection(), "raw_effects");
    long dedupEffects = dedup.values().stream().mapToLong(Integer::longValue).sum();
    long rawEffects = raw.values().stream().mapToLong(Integer::longValue).sum();
    long inWindow;
    try (PreparedStatement p = downstream.connection().prepareStatement("SELECT COUNT(*) FROM "
        + "dedup_effects WHERE at >= ? AND at < ?")) {
      p.setLong(1, faults.faultStartMillis());
      p.setLong(2, faults.faultEndMillis());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        inWindow = rs.getLong(1);
      }
    }
    double throughput = faults.faultSeconds() <= 0 ? 0 : inWindow / faults.faultSeconds();

    long poison = 0;
    long messages = 0;
    long duplicates = 0;
    long dedupMissing = 0;
    long dedupDoubled = 0;
    long rawRepeated = 0;
    long reruns = 0;
    long notCompleted = 0;
    long poisonNotFailed = 0;
    long poisonWithEffects = 0;
    long poisonDeadLettered = 0;
    long poisonNotDeadLettered = 0;
    long lettersRepeated = 0;
    long wrongLetters = 0;
    long lost = 0;
    java.util.Set<String> known = new java.util.HashSet<>();
    for (Published e : events) {
      known.add(e.id());
      messages += e.copies();
      duplicates += e.copies() > 1 ? 1 : 0;
      int d = dedup.getOrDefault(e.id(), 0);
      int l = letters.getOrDefault(e.id(), 0);
      IdempotencyRecord record = find(store, ChaosWorker.key(runId, e.id()));
      boolean completed = record != null && record.status() == Status.COMPLETED;
      Outcome.Kind outcome = completed ? record.outcome().kind() : null;
      if (e.poison()) {
        poison++;
        if (d > 0 || raw.getOrDefault(e.id(), 0) > 0) {
          poisonWithEffects++;
        }
        if (l == 0) {
          poisonNotDeadLettered++;
        } else {
          poisonDeadLettered++;
          lettersRepeated += l - 1;
        }
        if (outcome != Outcome.Kind.FAILURE) {
          poisonNotFailed++;
        }
        continue;
      }
      if (d == 0) {
        dedupMissing++;
      } else if (d > 1) {
        dedupDoubled++;
      }
      if (raw.getOrDefault(e.id(), 0) > 1) {
        rawRepeated++;
      }
      if (l > 0) {
        wrongLetters++;
      }
      if (outcome == Outcome.Kind.SUCCESS) {
        reruns += Math.max(0, record.attempts() - 1);
      } else {
        notCompleted++;
      }
      if (d == 0 || outcome != Outcome.Kind.SUCCESS) {
        lost++;
      }
    }
    for (Map.Entry<String, Integer> letter : letters.entrySet()) {
      if (!known.contains(letter.getKey())) {
        wrongLetters++;
      }
    }
    long deadLetters = letters.values().stream().mapToLong(Integer::longValue).sum();
    Figures f = new Figures(events.size(), poison, messages, duplicates, dedupEffects,
        dedupMissing, dedupDoubled, rawEffects, rawRepeated, reruns, notCompleted,
        poisonNotFailed, poisonWithEffects, deadLetters, poisonDeadLettered,
        poisonNotDeadLettered, lettersRepeated, wrongLetters, lost, unsettled,
        countsUnacknowledged, faults, throughput);
    return new Result(f, violations(f));
  }

  private static List<String> violations(Figures f) {
    List<String> v = new ArrayList<>();
    if (f.dedupDoubled() > 0) {
      v.add(f.dedupDoubled() + " events made their deduplicated effect more than once");
    }
    if (f.dedupMissing() > 0) {
      v.add(f.dedupMissing() + " events never made their deduplicated effect");
    }
    if (f.lost() > 0) {
      v.add(f.lost() + " events lost (no deduplicated effect, or no COMPLETED record with a "
          + "SUCCESS outcome)");
    }
    if (f.notCompleted() > 0 && f.lost() == 0) {
      v.add(f.notCompleted() + " records not COMPLETED");
    }
    if (f.poisonNotDeadLettered() > 0) {
      v.add(f.poisonNotDeadLettered() + " poison events never dead-lettered");
    }
    if (f.poisonNotFailed() > 0) {
      v.add(f.poisonNotFailed() + " poison events without their failure stored (a COMPLETED "
          + "record with a FAILURE outcome)");
    }
    if (f.poisonWithEffects() > 0) {
      v.add(f.poisonWithEffects() + " poison events made effects");
    }
    if (f.wrongLetters() > 0) {
      v.add(f.wrongLetters() + " dead letters of events that are not poison");
    }
    if (f.unsettled() > 0) {
      v.add("the broker did not drain: " + f.unsettled() + " messages never acknowledged");
    }
    if (f.faults().workersExited() > 0) {
      v.add(f.faults().workersExited() + " workers exited by themselves (see " + ChaosWorkers.LOG
          + ")");
    }
    if (f.faults().termTimeouts() > 0) {
      v.add(f.faults().termTimeouts() + " workers did not stop within "
          + ChaosWorkers.TERM_MILLIS / 1000 + " s of SIGTERM (killed)");
    }
    return v;
  }

  /** How many distinct events made their deduplicated effect so far (for the drain). */
  static long handled(ChaosDownstream downstream) throws SQLException {
    try (Statement s = downstream.connection().createStatement();
         ResultSet rs = s.executeQuery("SELECT COUNT(DISTINCT event) FROM dedup_effects")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static List<Row> rows(Figures f, boolean sabotage) {
    List<Row> rows = new ArrayList<>();
    rows.add(row("events (poison among them)", f.events() + " (" + f.poison() + ")"));
    rows.add(row("messages published (duplicates: same event twice)",
        f.messages() + " (" + f.duplicates() + ")"));
    rows.add(new Row("effects with dedupe (" + (sabotage ? "SABOTAGED key"
        : "Attempt.key()") + ")", count(f.dedupEffects()), "1 per event",
        check(f.dedupDoubled() + f.dedupMissing() == 0,
            f.dedupDoubled() + " doubled, " + f.dedupMissing() + " missing")));
    rows.add(new Row("effects without dedupe (a plain log)", count(f.rawEffects()),
        "doubles expected", f.rawRepeated() + " events ran twice+"));
    rows.add(row("claims taken again (store: attempts - 1)", count(f.reruns())));
    rows.add(new Row("poison events dead-lettered", count(f.poisonDeadLettered()),
        "1 per poison", check(f.poisonNotDeadLettered() + f.wrongLetters()
            + f.poisonNotFailed() + f.poisonWithEffects() == 0,
            f.poisonNotDeadLettered() + " missing, " + f.wrongLetters() + " not poison, "
                + f.poisonNotFailed() + " failure not stored")));
    rows.add(new Row("  dead letters read back", count(f.deadLetters()), "",
        f.lettersRepeated() == 0 ? "" : f.lettersRepeated() + " repeated (at-least-once)"));
    rows.add(new Row("lost events", count(f.lost()), "0", check(f.lost() == 0, "")));
    rows.add(new Row(f.countsUnacknowledged()
        ? "left unacknowledged on the broker" : "left in the queue after the workers stopped",
        count(f.unsettled()), "0", check(f.unsettled() == 0, "")));
    Faults x = f.faults();
    rows.add(row("workers killed (kill -9)", count(x.kills())));
    rows.add(row("workers frozen past their lease (SIGSTOP)", count(x.freezes())));
    rows.add(new Row("workers stopped by SIGTERM (graceful, mid-batch)",
        count(x.terms()), "", x.termTimeouts() == 0 ? ""
            : "VIOLATION: " + x.termTimeouts() + " did not stop"));
    if (x.restarts() > 0) {
      rows.add(row("store restarts (kill -9, start again)", count(x.restarts())));
    }
    if (x.proxyCuts() + x.proxyDelays() > 0) {
      rows.add(row("proxy: connections cut / chunks delayed",
          x.proxyCuts() + " / " + x.proxyDelays()));
    }
    rows.add(new Row("worker processes started", count(x.workersStarted()), "",
        x.workersExited() == 0 ? "" : "VIOLATION: " + x.workersExited() + " exited by themselves"));
    rows.add(row("throughput (events handled/s under faults)",
        String.format(Locale.ROOT, "%.1f", f.throughput())));
    rows.add(row("faults / drain (s)", String.format(Locale.ROOT, "%.1f / %.1f",
        x.faultSeconds(), x.drainSeconds())));
    return rows;
  }

  static void print(PrintWriter out, Figures f, boolean sabotage) {
    ChaosAuditTable.print(out, rows(f, sabotage));
  }

  static Json.Obj json(Figures f) {
    Faults x = f.faults();
    return Json.obj()
        .put("events", f.events())
        .put("poison_events", f.poison())
        .put("messages_published", f.messages())
        .put("duplicates_published", f.duplicates())
        .put("effects_with_dedupe", f.dedupEffects())
        .put("effects_with_dedupe_doubled", f.dedupDoubled())
        .put("effects_with_dedupe_missing", f.dedupMissing())
        .put("effects_without_dedupe", f.rawEffects())
        .put("effects_without_dedupe_events_repeated", f.rawRepeated())
        .put("work_reruns", f.reruns())
        .put("records_not_completed", f.notCompleted())
        .put("poison_dead_lettered", f.poisonDeadLettered())
        .put("poison_not_dead_lettered", f.poisonNotDeadLettered())
        .put("poison_failure_not_stored", f.poisonNotFailed())
        .put("poison_with_effects", f.poisonWithEffects())
        .put("dead_letters", f.deadLetters())
        .put("dead_letters_repeated", f.lettersRepeated())
        .put("dead_letters_not_poison", f.wrongLetters())
        .put("lost_events", f.lost())
        .put("unacknowledged", f.unsettled())
        .put("kills", x.kills())
        .put("freezes", x.freezes())
        .put("sigterms", x.terms())
        .put("sigterm_timeouts", x.termTimeouts())
        .put("store_restarts", x.restarts())
        .put("proxy_cuts", x.proxyCuts())
        .put("proxy_delays", x.proxyDelays())
        .put("workers_started", x.workersStarted())
        .put("workers_exited_by_themselves", x.workersExited())
        .put("fault_seconds", x.faultSeconds())
        .put("drain_seconds", x.drainSeconds())
        .put("throughput_events_per_second", f.throughput());
  }
}
