package dev.once.jdbc.internal;

import dev.once.spi.IdempotencyRecord;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * SQLite. One writer at a time: a claim is {@code INSERT … ON CONFLICT DO NOTHING} in autocommit; on
 * conflict, a read, and if the decision writes, {@code BEGIN IMMEDIATE} (takes the write lock at
 * once, so a read never has to be upgraded, which fails with SQLITE_BUSY however long the busy
 * timeout), read, decide, update, commit. Connections need WAL and a busy timeout
 * ({@code JdbcStore.sqlite(Path)} sets both).
 */
final class SqliteDialect extends Dialect {

  private final String purgeSql;
  private final String reapSql;

  SqliteDialect(List<String> schemaResources, TableName table) {
    super("SQLITE", schemaResources, table, false);
    String t = table.qualified();
    purgeSql = "DELETE FROM " + t + " WHERE rowid IN (SELECT rowid FROM " + t
        + " WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)";
    reapSql = "UPDATE " + t + " SET status = 'FAILED', last_error = 'lease expired',"
        + " updated_at = ? WHERE rowid IN (SELECT rowid FROM " + t
        + " WHERE status = 'IN_PROGRESS' AND lease_until <= ? ORDER BY lease_until LIMIT ?)";
  }

  /**
   * Reads before inserting. On SQLite an insert takes the database's only write lock even when
   * it conflicts, so a replay answered insert-first queues behind every writer (measured by
   * {@code once bench}: replays at 0.11x of a plain SELECT). A WAL read takes no lock, and a
   * decision that writes nothing (Replay, InProgress, Mismatch) is exact at the instant of the
   * read. An absent key still goes insert-first: this is never select-then-insert.
   */
  @Override
  FirstStep insertOrRead(Connection c, IdempotencyRecord fresh, ClaimOrder order)
      throws SQLException {
    IdempotencyRecord current = read(c, fresh.key());
    if (current != null) {
      return new FirstStep(false, current);
    }
    return super.insertOrRead(c, fresh, order);
  }

  @Override
  String lockSuffix() {
    return ""; // BEGIN IMMEDIATE already holds the database's write lock
  }

  @Override
  String greatest() {
    return "MAX"; // the scalar, multi-argument max()
  }

  @Override
  <T> T inTransaction(Connection c, SqlWork<T> body) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("BEGIN IMMEDIATE");
      try {
        T result = body.run();
        s.execute("COMMIT");
        return result;
      } catch (Throwable t) {
        try {
          s.execute("ROLLBACK");
        } catch (SQLException | RuntimeException e) {
          t.addSuppressed(e);
        }
        throw t;
      }
    }
  }

  @Override
  boolean isTransient(SQLException e) {
    int primary = e.getErrorCode() & 0xFF;
    return super.isTransient(e) || primary == 5 /* SQLITE_BUSY */ || primary == 6 /* LOCKED */;
  }

  @Override
  boolean mayHaveBeenApplied(SQLException e) {
    // SQLITE_IOERR: a write or the commit failed in the file system; its fate is unknown.
    return super.mayHaveBeenApplied(e) || (e.getErrorCode() & 0xFF) == 10;
  }

  @Override
  boolean hasColumn(Connection c, String column) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("PRAGMA table_info(" + table.qualified() + ")")) {
      while (rs.next()) {
        if (column.equalsIgnoreCase(rs.getString("name"))) {
          return true;
        }
      }
      return false;
    }
  }

  /** No {@code ADD COLUMN IF NOT EXISTS}: a racer that added it first is not a failure. */
  @Override
  void addColumn(Connection c, List<String> statements) throws SQLException {
    try {
      super.addColumn(c, statements);
    } catch (SQLException e) {
      if (!String.valueOf(e.getMessage()).contains("duplicate column name")) {
        throw e;
      }
    }
  }

  @Override
  int purge(Connection c, long nowMicros, int limit) throws SQLException {
    return execute(c, purgeSql, nowMicros, limit);
  }

  @Override
  int reap(Connection c, long nowMicros, int limit) throws SQLException {
    return execute(c, reapSql, nowMicros, nowMicros, limit);
  }
}
