package dev.once.cli.chaos;

import static dev.once.cli.chaos.ChaosAuditTable.check;
import static dev.once.cli.chaos.ChaosAuditTable.count;
import static dev.once.cli.chaos.ChaosAuditTable.find;
import static dev.once.cli.chaos.ChaosAuditTable.perEvent;
import static dev.once.cli.chaos.ChaosAuditTable.row;

import dev.once.StoreUnavailableException;
import dev.once.cli.chaos.ChaosAuditTable.Row;
import dev.once.cli.chaos.ChaosQueue.Answer;
import dev.once.cli.support.Json;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The audit at the end of a {@code once chaos} run, from what the run left behind and nothing the
 * workers said about themselves: the queue (events, messages, one row per finished delivery with
 * the answer Once gave), the two downstream tables, the ledger of a SQL store and the store's own
 * records, read one by one.
 *
 * <p>What must hold, and is a violation otherwise (exit code 1):
 * <ul>
 *   <li>every event has exactly one effect with dedupe (the downstream deduplicated on
 *       {@code Attempt.key()}), and on a SQL store exactly one transactional debit, and the
 *       accounts dropped by exactly the sum of the debits;
 *   <li>no event is lost: every message acknowledged, every event's record COMPLETED;
 *   <li>every delivery that got an outcome got the same one for its event, and it is the stored
 *       one;
 *   <li>no event ran again after an outcome of it was acknowledged (a raw effect under a newer
 *       token after the first delivery that got the outcome): that would mean a stored
 *       completion was lost, as a failover to a replica that never received it loses it;
 *   <li>no delivery failed with an unexpected error, no worker exited by itself, the queue
 *       drained.
 * </ul>
 * Effects without dedupe that ran twice are expected and reported, never a violation: they are
 * what a downstream without idempotency keys gets from any at-least-once consumer.
 */
final class ChaosAudit {

  /** Counts of the faults the coordinator injected and of the run's phases. */
  record Faults(long kills, long freezes, long restarts, long proxyCuts, long proxyDelays,
      long workersStarted, long workersExited, double faultSeconds, double drainSeconds,
      boolean drained, long faultStartMillis, long faultEndMillis,
      List<ChaosFailover.Failover> failovers) {}

  /** Every figure of the audit. {@code debits} and the ledger's are null without a ledger. */
  record Figures(long events, long messages, long duplicates, long deliveries, long unacked,
      Map<Answer, Long> answers, long takeovers, long staleAcks, long reruns,
      long dedupEffects, long dedupMissing, long dedupDoubled,
      long rawEffects, long rawRepeated,
      Long debits, Long debitsMissing, Long debitsDoubled, Boolean balanced,
      long lost, long notCompleted, long mismatches, long completionsLost,
      long storeErrorsInFailovers, Faults faults, double throughput) {

    long answer(Answer a) {
      return answers.getOrDefault(a, 0L);
    }
  }

  /** The figures and what in them breaks Once's promise. */
  record Result(Figures figures, List<String> violations) {
    boolean held() {
      return violations.isEmpty();
    }
  }

  private ChaosAudit() {}

  /**
   * Audits a finished run.
   *
   * @param ledger null without a SQL store
   * @throws SQLException              if the run's files or the ledger cannot be read
   * @throws StoreUnavailableException if the store cannot be read
   */
  static Result audit(String runId, ChaosQueue queue, ChaosDownstream downstream,
      IdempotencyStore store, ChaosLedger ledger, DataSource ledgerSource, Faults faults)
      throws SQLException {
    Connection q = queue.connection();
    Map<String, Integer> events = new LinkedHashMap<>();
    try (Statement s = q.createStatement();
         ResultSet rs = s.executeQuery("SELECT event, amount FROM events ORDER BY event")) {
      while (rs.next()) {
        events.put(rs.getString(1), rs.getInt(2));
      }
    }
    long messages;
    long duplicates;
    long deliveries;
    long unacked;
    try (Statement s = q.createStatement(); ResultSet rs = s.executeQuery("SELECT COUNT(*), "
        + "COALESCE(SUM(duplicate), 0), COALESCE(SUM(receives), 0), "
        + "COALESCE(SUM(CASE WHEN acked_at IS NULL THEN 1 ELSE 0 END), 0) FROM messages")) {
      rs.next();
      messages = rs.getLong(1);
      duplicates = rs.getLong(2);
      deliveries = rs.getLong(3);
      unacked = rs.getLong(4);
    }
    Set<String> acknowledged = new HashSet<>();
    try (Statement s = q.createStatement(); ResultSet rs = s.executeQuery(
        "SELECT DISTINCT event FROM messages WHERE acked_at IS NOT NULL")) {
      while (rs.next()) {
        acknowledged.add(rs.getString(1));
      }
    }
    Map<Answer, Long> answers = new EnumMap<>(Answer.class);
    long takeovers = 0;
    long staleAcks = 0;
    try (Statement s = q.createStatement(); ResultSet rs = s.executeQuery("SELECT answer, "
        + "COUNT(*), SUM(takeover), SUM(CASE WHEN answer IN ('RAN', 'REPLAYED') AND acked = 0 "
        + "THEN 1 ELSE 0 END) FROM deliveries GROUP BY answer")) {
      while (rs.next()) {
        answers.put(Answer.valueOf(rs.getString(1)), rs.getLong(2));
        takeovers += rs.getLong(3);
        staleAcks += rs.getLong(4);
      }
    }
    Map<String, Set<String>> seen = new HashMap<>();
    try (Statement s = q.createStatement(); ResultSet rs = s.executeQuery("SELECT event, outcome "
        + "FROM deliveries WHERE answer IN ('RAN', 'REPLAYED')")) {
      while (rs.next()) {
        seen.computeIfAbsent(rs.getString(1), e -> new HashSet<>()).add(rs.getString(2));
      }
    }
    long inWindow;
    try (PreparedStatement p = q.prepareStatement("SELECT COUNT(*) FROM deliveries "
        + "WHERE ended_at >= ? AND ended_at < ?")) {
      p.setLong(1, faults.faultStartMillis());
      p.setLong(2, faults.faultEndMillis());
      try (ResultSet rs = p.executeQuery()) {
        rs.next();
        inWindow = rs.getLong(1);
      }
    }
    double throughput = faults.faultSeconds() <= 0 ? 0 : inWindow / faults.faultSeconds();
    long completionsLost = completionsLost(q, downstream.connection());
    long storeErrorsInFailovers = storeErrorsIn(q, faults.failovers());

    Map<String, Integer> dedup = perEvent(downstream.connection(), "dedup_effects");
    Map<String, Integer> raw = perEvent(downstream.connection(), "raw_effects");
    long dedupEffects = dedup.values().stream().mapToLong(Integer::longValue).sum();
    long rawEffects = raw.values().stream().mapToLong(Integer::longValue).sum();
    long dedupMissing = 0;
    long dedupDoubled = 0;
    long rawRepeated = 0;
    for (String event : events.keySet()) {
      int d = dedup.getOrDefault(event, 0);
      if (d == 0) {
        dedupMissing++;
      } else if (d > 1) {
        dedupDoubled++;
      }
      if (raw.getOrDefault(event, 0) > 1) {
        rawRepeated++;
      }
    }

    Long debits = null;
    Long debitsMissing = null;
    Long debitsDoubled = null;
    Boolean balanced = null;
    if (ledger != null) {
      ChaosLedger.State state = ledger.read(ledgerSource);
      debits = state.debitsPerEvent().values().stream().mapToLong(Integer::longValue).sum();
      long missing = 0;
      long doubled = 0;
      long expected = 0;
      for (Map.Entry<String, Integer> e : events.entrySet()) {
        int n = state.debitsPerEvent().getOrDefault(e.getKey(), 0);
        missing += n == 0 ? 1 : 0;
        doubled += n > 1 ? 1 : 0;
        expected += e.getValue();
      }
      debitsMissing = missing;
      debitsDoubled = doubled;
      balanced = state.balanceDrop() == state.debited() && state.debited() == expected;
    }

    long lost = 0;
    long notCompleted = 0;
    long mismatches = 0;
    long reruns = 0;
    for (String event : events.keySet()) {
      IdempotencyRecord record = find(store, ChaosWorker.key(runId, event));
      boolean completed = record != null && record.status() == Status.COMPLETED;
      if (!completed) {
        notCompleted++;
      } else {
        reruns += Math.max(0, record.attempts() - 1);
      }
      if (!acknowledged.contains(event) || !completed) {
        lost++;
      }
      Set<String> values = seen.getOrDefault(event, Set.of());
      String stored = completed
          ? new String(record.outcome().body(), StandardCharsets.UTF_8) : null;
      if (values.size() > 1 || (stored != null && !values.isEmpty()
          && !values.contains(stored))) {
        mismatches++;
      }
      if (ledger != null) {
        IdempotencyRecord debit = find(store, ChaosWorker.debitKey(runId, event));
        if (debit == null || debit.status() != Status.COMPLETED) {
          notCompleted++;
        }
      }
    }

    Figures figures = new Figures(events.size(), messages, duplicates, deliveries, unacked,
        answers, takeovers, staleAcks, reruns, dedupEffects, dedupMissing, dedupDoubled,
        rawEffects, rawRepeated, debits, debitsMissing, debitsDoubled, balanced, lost,
        notCompleted, mismatches, completionsLost, storeErrorsInFailovers, faults, throughput);
    return new Result(figures, violations(figures));
  }

  /**
   * Events whose work ran again after a delivery was answered its outcome: a raw effect under a
   * newer token than that outcome's, made after that answer. Zombies carry older tokens, so only
   * a new claim on a key whose completion was acknowledged, then lost, counts.
   */
  static long completionsLost(Connection queue, Connection downstream) throws SQLException {
    Map<String, long[]> answered = new HashMap<>();
    try (Statement s = queue.createStatement(); ResultSet rs = s.executeQuery("SELECT event, "
        + "token, ended_at FROM deliveries WHERE answer IN ('RAN', 'REPLAYED') "
        + "ORDER BY ended_at")) {
      while (rs.next()) {
        answered.putIfAbsent(rs.getString(1), new long[] {rs.getLong(2), rs.getLong(3)});
      }
    }
    Set<String> ranAgain = new HashSet<>();
    try (Statement s = downstream.createStatement();
         ResultSet rs = s.executeQuery("SELECT event, token, at FROM raw_effects")) {
      while (rs.next()) {
        long[] first = answered.get(rs.getString(1));
        if (first != null && rs.getLong(2) > first[0] && rs.getLong(3) > first[1]) {
          ranAgain.add(rs.getString(1));
        }
      }
    }
    return ranAgain.size();
  }

  /** Deliveries answered a store error while a failover ran (its kill to its rejoin). */
  static long storeErrorsIn(Connection queue, List<ChaosFailover.Failover> failovers)
      throws SQLException {
    if (failovers.isEmpty()) {
      return 0;
    }
    long count = 0;
    try (Statement s = queue.createStatement(); ResultSet rs = s.executeQuery(
        "SELECT ended_at FROM deliveries WHERE answer = 'STORE_ERROR'")) {
      while (rs.next()) {
        long at = rs.getLong(1);
        for (ChaosFailover.Failover f : failovers) {
          if (at >= f.killedAt() && at <= f.rejoinedAt()) {
            count++;
            break;
          }
        }
      }
    }
    return count;
  }

  private static List<String> violations(Figures f) {
    List<String> v = new ArrayList<>();
    if (f.dedupDoubled() > 0) {
      v.add(f.dedupDoubled() + " events made their deduplicated effect more than once");
    }
    if (f.dedupMissing() > 0) {
      v.add(f.dedupMissing() + " events never made their deduplicated effect");
    }
    if (f.debitsDoubled() != null && f.debitsDoubled() > 0) {
      v.add(f.debitsDoubled() + " events were debited more than once");
    }
    if (f.debitsMissing() != null && f.debitsMissing() > 0) {
      v.add(f.debitsMissing() + " events were never debited");
    }
    if (Boolean.FALSE.equals(f.balanced())) {
      v.add("the accounts' balances do not match the debits");
    }
    if (f.lost() > 0) {
      v.add(f.lost() + " events lost (a message never acknowledged, or no COMPLETED record)");
    }
    if (f.notCompleted() > 0 && f.lost() == 0) {
      v.add(f.notCompleted() + " records not COMPLETED");
    }
    if (f.mismatches() > 0) {
      v.add(f.mismatches() + " events whose deliveries saw different outcomes");
    }
    if (f.completionsLost() > 0) {
      v.add(f.completionsLost() + " events ran again after their outcome had been answered (a "
          + "stored completion was lost)");
    }
    if (f.answer(Answer.ERROR) > 0) {
      v.add(f.answer(Answer.ERROR) + " deliveries failed with an unexpected error (see "
          + ChaosWorkers.LOG + ")");
    }
    if (f.faults().workersExited() > 0) {
      v.add(f.faults().workersExited() + " workers exited by themselves (see " + ChaosWorkers.LOG
          + ")");
    }
    if (!f.faults().drained()) {
      v.add("the queue did not drain: " + f.unacked() + " messages never acknowledged");
    }
    return v;
  }

  static List<Row> rows(Figures f, boolean sabotage) {
    List<Row> rows = new ArrayList<>();
    rows.add(row("events", count(f.events())));
    rows.add(new Row("duplicates produced (same event enqueued twice)", count(f.duplicates()),
        "", ""));
    rows.add(row("deliveries (incl. redeliveries)", count(f.deliveries())));
    rows.add(new Row("  work ran / outcome replayed", f.answer(Answer.RAN) + " / "
        + f.answer(Answer.REPLAYED), "", ""));
    rows.add(new Row("  in progress elsewhere (made visible again)",
        count(f.answer(Answer.IN_PROGRESS)), "", ""));
    rows.add(new Row("  store errors (store down, connection cut)",
        count(f.answer(Answer.STORE_ERROR)), "", ""));
    rows.add(new Row("  lease lost (a zombie's late writes fenced)",
        count(f.answer(Answer.LEASE_LOST)), "", ""));
    rows.add(new Row("  unfinished (worker killed or frozen)",
        count(Math.max(0, f.deliveries() - f.answers().values().stream()
            .mapToLong(Long::longValue).sum())), "", ""));
    if (f.answer(Answer.HARNESS_ERROR) > 0) {
      rows.add(new Row("  queue or downstream file busy", count(f.answer(Answer.HARNESS_ERROR)),
          "", ""));
    }
    rows.add(row("takeovers (lease passed, token+1)", count(f.takeovers())));
    rows.add(row("work re-runs (store: attempts - 1)", count(f.reruns())));
    rows.add(new Row("effects with dedupe (" + (sabotage ? "SABOTAGED key" : "Attempt.key()")
        + ")", count(f.dedupEffects()), "1 per event",
        check(f.dedupDoubled() + f.dedupMissing() == 0,
            f.dedupDoubled() + " doubled, " + f.dedupMissing() + " missing")));
    rows.add(new Row("effects without dedupe (a plain log)", count(f.rawEffects()),
        "doubles expected", f.rawRepeated() + " events ran twice+"));
    if (f.debits() != null) {
      rows.add(new Row("transactional debits (TransactionalOnce)", count(f.debits()),
          "1 per event", check(f.debitsDoubled() + f.debitsMissing() == 0
              && f.balanced(), f.debitsDoubled() + " doubled, " + f.debitsMissing()
              + " missing" + (f.balanced() ? "" : ", balance off"))));
    } else {
      rows.add(new Row("transactional debits (TransactionalOnce)", "-", "SQL stores", ""));
    }
    rows.add(new Row("lost events", count(f.lost()), "0", check(f.lost() == 0, "")));
    rows.add(new Row("outcome mismatches", count(f.mismatches()), "0",
        check(f.mismatches() == 0, "")));
    rows.add(new Row("completions lost (ran again after answered)", count(f.completionsLost()),
        "0", check(f.completionsLost() == 0, "")));
    rows.add(new Row("unexpected errors", count(f.answer(Answer.ERROR)), "0",
        check(f.answer(Answer.ERROR) == 0, "")));
    Faults x = f.faults();
    rows.add(row("workers killed (kill -9)", count(x.kills())));
    rows.add(row("workers frozen past their lease (SIGSTOP)", count(x.freezes())));
    rows.add(row("store restarts (kill -9, start again)", count(x.restarts())));
    if (!x.failovers().isEmpty()) {
      rows.add(row("store failovers (primary kill -9, replica promoted)",
          count(x.failovers().size())));
      rows.add(new Row("  promotion: kill to writes, min / max (s)", String.format(Locale.ROOT,
          "%.1f / %.1f", promotion(x, true) / 1000.0, promotion(x, false) / 1000.0), "", ""));
      rows.add(new Row("  store errors while failing over", count(f.storeErrorsInFailovers()),
          "", ""));
    }
    rows.add(new Row("proxy: connections cut / chunks delayed",
        x.proxyCuts() + " / " + x.proxyDelays(), "", ""));
    rows.add(row("worker processes started", count(x.workersStarted())));
    rows.add(new Row("throughput (deliveries/s under faults)",
        String.format(Locale.ROOT, "%.1f", f.throughput()), "", ""));
    rows.add(new Row("faults / drain (s)", String.format(Locale.ROOT, "%.1f / %.1f",
        x.faultSeconds(), x.drainSeconds()), "", ""));
    return rows;
  }

  private static long promotion(Faults x, boolean min) {
    return x.failovers().stream().mapToLong(ChaosFailover.Failover::promotionMillis)
        .reduce(min ? Math::min : Math::max).orElse(0);
  }

  static void print(PrintWriter out, Figures f, boolean sabotage) {
    ChaosAuditTable.print(out, rows(f, sabotage));
  }

  static Json.Obj json(Figures f) {
    Faults x = f.faults();
    Json.Obj answers = Json.obj();
    for (Answer a : Answer.values()) {
      answers.put(a.name().toLowerCase(Locale.ROOT), f.answer(a));
    }
    return Json.obj()
        .put("events", f.events())
        .put("messages", f.messages())
        .put("duplicates_produced", f.duplicates())
        .put("deliveries", f.deliveries())
        .put("answers", answers)
        .put("unacknowledged", f.unacked())
        .put("takeovers", f.takeovers())
        .put("stale_acks", f.staleAcks())
        .put("work_reruns", f.reruns())
        .put("effects_with_dedupe", f.dedupEffects())
        .put("effects_with_dedupe_doubled", f.dedupDoubled())
        .put("effects_with_dedupe_missing", f.dedupMissing())
        .put("effects_without_dedupe", f.rawEffects())
        .put("effects_without_dedupe_events_repeated", f.rawRepeated())
        .put("transactional_debits", f.debits())
        .put("transactional_debits_doubled", f.debitsDoubled())
        .put("transactional_debits_missing", f.debitsMissing())
        .put("balances_match", f.balanced())
        .put("lost_events", f.lost())
        .put("records_not_completed", f.notCompleted())
        .put("outcome_mismatches", f.mismatches())
        .put("completions_lost", f.completionsLost())
        .put("kills", x.kills())
        .put("freezes", x.freezes())
        .put("store_restarts", x.restarts())
        .put("failovers", x.failovers().size())
        .put("failover_promotion_ms_min", promotion(x, true))
        .put("failover_promotion_ms_max", promotion(x, false))
        .put("store_errors_while_failing_over", f.storeErrorsInFailovers())
        .put("proxy_cuts", x.proxyCuts())
        .put("proxy_delays", x.proxyDelays())
        .put("workers_started", x.workersStarted())
        .put("workers_exited_by_themselves", x.workersExited())
        .put("fault_seconds", x.faultSeconds())
        .put("drain_seconds", x.drainSeconds())
        .put("drained", x.drained())
        .put("throughput_deliveries_per_second", f.throughput());
  }
}
