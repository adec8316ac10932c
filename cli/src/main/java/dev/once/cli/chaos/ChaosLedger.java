package dev.once.cli.chaos;

import dev.once.cli.store.StoreUris;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The business tables of {@code once chaos}'s transactional debit, in the database of a SQL store
 * under test: accounts and one row per debit, written by {@code TransactionalOnce} in the
 * transaction that also claims the key and stores the outcome. Names are the run's own
 * ({@code once_chaos_<run>_accounts}, {@code once_chaos_<run>_debits}), created at the start and
 * dropped at the end, so that runs never see each other's rows and the records table is never
 * touched.
 *
 * <p>The debit rows have no unique key on purpose: a debit that ran twice would show as two
 * rows, and the audit counts them.
 */
final class ChaosLedger {

  static final int ACCOUNTS = 16;
  static final long OPENING_BALANCE = 1_000_000_000L;

  private final String accounts;
  private final String debits;

  ChaosLedger(String runId) {
    this.accounts = "once_chaos_" + runId + "_accounts";
    this.debits = "once_chaos_" + runId + "_debits";
  }

  String accountsTable() {
    return accounts;
  }

  String debitsTable() {
    return debits;
  }

  /** Creates both tables and the accounts with their opening balance. */
  void create(DataSource dataSource) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + accounts
          + " (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)");
      s.execute("CREATE TABLE " + debits + " (event VARCHAR(64) NOT NULL, amount BIGINT NOT NULL,"
          + " worker INT NOT NULL, token BIGINT NOT NULL)");
      try (PreparedStatement insert = c.prepareStatement("INSERT INTO " + accounts
          + " (id, balance) VALUES (?, ?)")) {
        for (int i = 0; i < ACCOUNTS; i++) {
          insert.setInt(1, i);
          insert.setLong(2, OPENING_BALANCE);
          insert.addBatch();
        }
        insert.executeBatch();
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
  }

  /** Drops both tables; a failure is reported, never thrown (the audit is done already). */
  String drop(DataSource dataSource) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + debits);
      s.execute("DROP TABLE IF EXISTS " + accounts);
      if (!c.getAutoCommit()) {
        c.commit();
      }
      return null;
    } catch (SQLException e) {
      return StoreUris.causeMessage(e);
    }
  }

  /** The account an event debits. */
  static int account(String event) {
    return Math.floorMod(event.hashCode(), ACCOUNTS);
  }

  /** The debit, on the connection of the transaction that claims the key. */
  void debit(Connection connection, String event, int amount, int worker, long token)
      throws SQLException {
    try (PreparedStatement update = connection.prepareStatement(
        "UPDATE " + accounts + " SET balance = balance - ? WHERE id = ?")) {
      update.setLong(1, amount);
      update.setInt(2, account(event));
      if (update.executeUpdate() != 1) {
        throw new SQLException("no account " + account(event) + " in " + accounts);
      }
    }
    try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + debits
        + " (event, amount, worker, token) VALUES (?, ?, ?, ?)")) {
      insert.setString(1, event);
      insert.setLong(2, amount);
      insert.setInt(3, worker);
      insert.setLong(4, token);
      insert.executeUpdate();
    }
  }

  /**
   * What the ledger holds at the end.
   *
   * @param debitsPerEvent debit rows per event
   * @param debited        the sum of the debit rows' amounts
   * @param balanceDrop    how much the accounts' balances dropped in all
   */
  record State(Map<String, Integer> debitsPerEvent, long debited, long balanceDrop) {}

  State read(DataSource dataSource) throws SQLException {
    Map<String, Integer> perEvent = new HashMap<>();
    long debited = 0;
    long balance;
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT event, COUNT(*), SUM(amount) FROM " + debits
          + " GROUP BY event")) {
        while (rs.next()) {
          perEvent.put(rs.getString(1), rs.getInt(2));
          debited += rs.getLong(3);
        }
      }
      try (ResultSet rs = s.executeQuery("SELECT SUM(balance) FROM " + accounts)) {
        rs.next();
        balance = rs.getLong(1);
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    return new State(perEvent, debited, (long) ACCOUNTS * OPENING_BALANCE - balance);
  }
}
