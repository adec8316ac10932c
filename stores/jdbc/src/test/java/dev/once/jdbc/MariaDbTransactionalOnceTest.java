package dev.once.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;

/** Transactional mode against MariaDB (see {@link Databases.MariaDb}). */
@Tag("mariadb")
class MariaDbTransactionalOnceTest extends ServerTransactionalOnceContract {

  @Override
  JdbcDialect dialect() {
    return JdbcDialect.MARIADB;
  }

  @Override
  List<String> happyPath() {
    return List.of("setAutoCommit(false)", "executeUpdate", "executeUpdate", "commit",
        "setAutoCommit(true)");
  }

  @Override
  List<String> replayPath() {
    return List.of("setAutoCommit(false)", "executeUpdate", "executeQuery", "rollback",
        "setAutoCommit(true)");
  }

  @Override
  String lockTimeout(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT @@SESSION.innodb_lock_wait_timeout")) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Override
  void setLockTimeoutInTransaction(Connection c, int seconds) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET SESSION innodb_lock_wait_timeout = " + seconds);
    }
  }

  @Override
  void resetLockTimeout(Connection c) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
    }
  }

  @Override
  long backendId(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT CONNECTION_ID()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Override
  void kill(long backendId) throws SQLException {
    try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("KILL CONNECTION " + backendId);
    }
  }

  /**
   * InnoDB refreshes its information_schema lock tables only when they were not read for 100 ms:
   * polling faster would look at the same stale snapshot forever.
   */
  @Override
  long pollMillis() {
    return 150;
  }

  @Override
  String diagnose(Connection probe) throws SQLException {
    StringBuilder b = new StringBuilder();
    for (String sql : List.of("SELECT * FROM information_schema.innodb_trx",
        "SELECT * FROM information_schema.innodb_lock_waits",
        "SELECT id, command, state, info FROM information_schema.processlist")) {
      try (Statement s = probe.createStatement(); ResultSet rs = s.executeQuery(sql)) {
        int n = rs.getMetaData().getColumnCount();
        b.append("\n").append(sql);
        while (rs.next()) {
          b.append("\n  ");
          for (int i = 1; i <= n; i++) {
            b.append(rs.getMetaData().getColumnLabel(i)).append('=').append(rs.getString(i))
                .append(' ');
          }
        }
      }
    }
    return b.toString();
  }

  @Override
  List<Long> waitersOn(Connection probe, long holder) throws SQLException {
    List<Long> waiting = new ArrayList<>();
    try (PreparedStatement ps = probe.prepareStatement(
        "SELECT r.trx_mysql_thread_id FROM information_schema.innodb_lock_waits w"
            + " JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id"
            + " JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id"
            + " WHERE b.trx_mysql_thread_id = ?")) {
      ps.setLong(1, holder);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          waiting.add(rs.getLong(1));
        }
      }
    }
    return waiting;
  }
}
