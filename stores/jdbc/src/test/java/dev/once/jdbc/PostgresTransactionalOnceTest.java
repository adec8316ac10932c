package dev.once.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;

/** Transactional mode against PostgreSQL (see {@link Databases.Postgres}). */
@Tag("postgres")
class PostgresTransactionalOnceTest extends ServerTransactionalOnceContract {

  @Override
  JdbcDialect dialect() {
    return JdbcDialect.POSTGRESQL;
  }

  /** pgjdbc: autocommit switches are local; the COMMIT rides with the completion. */
  @Override
  List<String> happyPath() {
    return List.of("setAutoCommit(false)", "execute", "execute", "setAutoCommit(true)");
  }

  @Override
  List<String> replayPath() {
    return List.of("setAutoCommit(false)", "execute", "rollback", "setAutoCommit(true)");
  }

  @Override
  String lockTimeout(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SHOW lock_timeout");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Override
  void setLockTimeoutInTransaction(Connection c, int seconds) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SET LOCAL lock_timeout = '" + seconds + "s'")) {
      ps.execute();
    }
  }

  @Override
  void resetLockTimeout(Connection c) {}

  @Override
  long backendId(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  void kill(long backendId) throws SQLException {
    try (Connection c = dataSource().getConnection();
        // Waits (up to 10 s) until the backend is gone, not only signalled.
        PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?, 10000)")) {
      ps.setInt(1, (int) backendId);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          throw new AssertionError("backend " + backendId + " was not terminated");
        }
      }
    }
  }

  @Override
  List<Long> waitersOn(Connection probe, long holder) throws SQLException {
    List<Long> waiting = new ArrayList<>();
    try (PreparedStatement ps = probe.prepareStatement(
        "SELECT pid FROM pg_stat_activity WHERE ? = ANY (pg_blocking_pids(pid))")) {
      ps.setInt(1, (int) holder);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          waiting.add(rs.getLong(1));
        }
      }
    }
    return waiting;
  }
}
