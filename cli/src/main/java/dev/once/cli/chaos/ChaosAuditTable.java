package dev.once.cli.chaos;

import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What the audits of both chaos modes ({@link ChaosAudit}, {@link ChaosBrokerAudit}) share: the
 * reads of the downstream and the store, and the table they print, so that both read and look
 * alike.
 */
final class ChaosAuditTable {

  private ChaosAuditTable() {}

  /** One line of the table. {@code check} is empty when the figure has no rule. */
  record Row(String label, String value, String rule, String check) {}

  /** A row without a rule. */
  static Row row(String label, String value) {
    return new Row(label, value, "", "");
  }

  static String check(boolean ok, String detail) {
    return ok ? "ok" : "VIOLATION" + (detail.isEmpty() ? "" : ": " + detail);
  }

  static String count(long n) {
    return Long.toString(n);
  }

  /** Prints {@code rows} as the audit's table. */
  static void print(PrintWriter out, List<Row> rows) {
    int label = rows.stream().mapToInt(r -> r.label().length()).max().orElse(0);
    int value = Math.max(8, rows.stream().mapToInt(r -> r.value().length()).max().orElse(0));
    int rule = rows.stream().mapToInt(r -> r.rule().length()).max().orElse(0);
    String format = "%-" + label + "s  %" + value + "s  %-" + rule + "s  %s%n";
    line(out, format, "", "figure", "must be", "");
    line(out, format, "-".repeat(label), "-".repeat(value), "-".repeat(rule), "");
    for (Row r : rows) {
      line(out, format, r.label(), r.value(), r.rule(), r.check());
    }
  }

  private static void line(PrintWriter out, String format, String... columns) {
    out.println(String.format(Locale.ROOT, format, (Object[]) columns).stripTrailing());
  }

  /** How many rows of a downstream {@code table} each event has. */
  static Map<String, Integer> perEvent(Connection c, String table) throws SQLException {
    Map<String, Integer> counts = new HashMap<>();
    try (Statement s = c.createStatement();
         ResultSet rs = s.executeQuery("SELECT event, COUNT(*) FROM " + table
             + " GROUP BY event")) {
      while (rs.next()) {
        counts.put(rs.getString(1), rs.getInt(2));
      }
    }
    return counts;
  }

  /** The record of {@code key}; a store error is tried again a few times. */
  static IdempotencyRecord find(IdempotencyStore store, IdempotencyKey key) {
    for (int attempt = 1; ; attempt++) {
      try {
        Optional<IdempotencyRecord> record = store.find(key);
        return record.orElse(null);
      } catch (StoreUnavailableException e) {
        if (attempt == 5) {
          throw e;
        }
        try {
          Thread.sleep(200L * attempt);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
  }
}
