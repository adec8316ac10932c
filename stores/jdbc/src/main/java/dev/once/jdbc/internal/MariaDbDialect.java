package dev.once.jdbc.internal;

import dev.once.spi.IdempotencyRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * MariaDB and MySQL (InnoDB). A claim is a plain {@code INSERT} in autocommit; a duplicate-key error
 * (1062) means the key exists: then a plain read, and if the decision writes,
 * {@code SELECT … FOR UPDATE}, decide, {@code UPDATE}, commit, at READ COMMITTED. Why not {@code INSERT IGNORE} (turns every error into a warning, including
 * truncation) or {@code ON DUPLICATE KEY UPDATE} (cannot express the decision, and affected-rows
 * counts are ambiguous). Why autocommit for the INSERT: after a duplicate-key error InnoDB keeps a
 * shared lock on the row until the transaction ends; inside a transaction, several racers holding
 * it and then asking for the exclusive lock deadlock one another. Why READ COMMITTED: REPEATABLE
 * READ takes gap locks on absent keys and ranges (purge, reap), another source of deadlocks.
 * Deadlocks (1213) and lock wait timeouts (1205) are retried a bounded number of times.
 */
final class MariaDbDialect extends Dialect {

  private final String purgeSql;
  private final String reapSql;

  MariaDbDialect(List<String> schemaResources, TableName table) {
    super("MARIADB", schemaResources, table, false);
    String t = table.qualified();
    purgeSql = "DELETE FROM " + t + " WHERE expires_at <= ? ORDER BY expires_at LIMIT ?";
    reapSql = "UPDATE " + t + " SET status = 'FAILED', last_error = 'lease expired',"
        + " updated_at = ? WHERE status = 'IN_PROGRESS' AND lease_until <= ?"
        + " ORDER BY lease_until LIMIT ?";
  }

  @Override
  String insertSuffix() {
    return "";
  }

  @Override
  boolean insertIfAbsent(Connection c, IdempotencyRecord fresh) throws SQLException {
    try {
      return super.insertIfAbsent(c, fresh);
    } catch (SQLException e) {
      if (e.getErrorCode() == 1062) {
        return false;
      }
      throw e;
    }
  }

  @Override
  <T> T inTransaction(Connection c, SqlWork<T> body) throws SQLException {
    return readCommitted(c, () -> super.inTransaction(c, body));
  }

  /** Runs {@code work} at READ COMMITTED, restoring the connection's level afterwards. */
  private static <T> T readCommitted(Connection c, SqlWork<T> work) throws SQLException {
    int level = c.getTransactionIsolation();
    if (level == Connection.TRANSACTION_READ_COMMITTED) {
      return work.run();
    }
    c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    try {
      return work.run();
    } finally {
      c.setTransactionIsolation(level);
    }
  }

  /** InnoDB's longest finite lock wait, in seconds (100000000 means forever). */
  private static final long LONGEST_LOCK_WAIT_SECONDS = 99_999_999;

  @Override
  boolean canLimitLockWait() {
    return true;
  }

  @Override
  void limitLockWait(Connection c, java.time.Duration wait) throws SQLException {
    // innodb_lock_wait_timeout is the session's: its own value is kept in a user variable, and
    // endLockWait puts it back.
    try (Statement s = c.createStatement()) {
      s.execute("SET @once_lock_wait = @@SESSION.innodb_lock_wait_timeout,"
          + " SESSION innodb_lock_wait_timeout = " + lockWaitBound(wait).getSeconds());
    }
  }

  /** Whole seconds, rounded up (0 would not wait at all). */
  @Override
  java.time.Duration lockWaitBound(java.time.Duration wait) {
    return java.time.Duration.ofSeconds(Math.min(LONGEST_LOCK_WAIT_SECONDS,
        Math.max(1, wait.getSeconds() + (wait.getNano() > 0 ? 1 : 0))));
  }

  @Override
  void endLockWait(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET SESSION innodb_lock_wait_timeout = @once_lock_wait");
    }
  }

  @Override
  boolean isLockWaitTimeout(SQLException e) {
    return e.getErrorCode() == 1205; // ER_LOCK_WAIT_TIMEOUT
  }

  @Override
  boolean isTransient(SQLException e) {
    // 1213 deadlock, 1205 lock wait timeout (InnoDB rolls back the statement; we roll back all).
    return super.isTransient(e) || e.getErrorCode() == 1213 || e.getErrorCode() == 1205
        || "40001".equals(e.getSQLState());
  }

  @Override
  boolean mayHaveBeenApplied(SQLException e) {
    // 70100 / 1927: the query or connection was killed; 1053: the server is shutting down.
    return super.mayHaveBeenApplied(e) || "70100".equals(e.getSQLState())
        || e.getErrorCode() == 1927 || e.getErrorCode() == 1053;
  }

  @Override
  boolean hasColumn(Connection c, String column) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM information_schema.columns"
        + " WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ?"
        + " AND column_name = ?")) {
      ps.setString(1, table.isQualified()
          ? table.qualified().substring(0, table.qualified().indexOf('.')) : null);
      ps.setString(2, table.name());
      ps.setString(3, column);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** MySQL has no {@code ADD COLUMN IF NOT EXISTS}: the column was checked just before. */
  @Override
  void addColumn(Connection c, List<String> statements) throws SQLException {
    String product = String.valueOf(c.getMetaData().getDatabaseProductName());
    if (product.toLowerCase(Locale.ROOT).contains("mariadb")) {
      super.addColumn(c, statements);
      return;
    }
    List<String> plain = new ArrayList<>();
    for (String sql : statements) {
      plain.add(sql.replace("ADD COLUMN IF NOT EXISTS", "ADD COLUMN"));
    }
    super.addColumn(c, plain);
  }

  @Override
  boolean countsChangedRows() {
    return true;
  }

  @Override
  int purge(Connection c, long nowMicros, int limit) throws SQLException {
    return readCommitted(c, () -> execute(c, purgeSql, nowMicros, limit));
  }

  @Override
  int reap(Connection c, long nowMicros, int limit) throws SQLException {
    return readCommitted(c, () -> execute(c, reapSql, nowMicros, nowMicros, limit));
  }
}
