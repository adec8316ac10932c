package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import dev.once.spi.Claim;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The batch claim's bounded wait on MariaDB: the session's {@code innodb_lock_wait_timeout}, in
 * whole seconds (100 ms waits one second), put back to the session's own value after the batch.
 * Before, a batch claim on MariaDB waited for a held row with all its callers.
 */
@Tag("mariadb")
class MariaDbBatchLockWaitTest extends BatchLockWaitContract {

  @Override
  HikariConfig database() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(Databases.MariaDb.URL);
    config.setUsername(Databases.MariaDb.USER);
    config.setPassword(Databases.MariaDb.PASSWORD);
    return config;
  }

  @Override
  JdbcDialect dialect() {
    return JdbcDialect.MARIADB;
  }

  @Override
  String boundInMessage() {
    return "1000 ms";
  }

  @Override
  String sessionLockWait(Connection c) throws Exception {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT @@SESSION.innodb_lock_wait_timeout")) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Override
  String defaultLockWait() throws Exception {
    try (Connection c = pool().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT @@GLOBAL.innodb_lock_wait_timeout")) {
      rs.next();
      return rs.getString(1);
    }
  }

  /** A session that set its own wait keeps it: the batch puts back what it found, not a default. */
  @Test
  void aSessionsOwnLockWaitIsPutBackNotTheDefault() throws Exception {
    everyPooledConnection("SET SESSION innodb_lock_wait_timeout = 7");
    try {
      JdbcStore store = store();
      for (Duration wait : List.of(Duration.ofMillis(1), Duration.ofDays(30000),
          Duration.ofSeconds(Long.MAX_VALUE))) {
        String k = "own-" + wait.getSeconds();
        assertThat(store.claimAll(List.of(request(key(k + "a")), request(key(k + "b"))), wait))
            .as("%s", wait).allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
      }
      assertThat(lockWaitOfEveryPooledConnection()).isEqualTo("7");
    } finally {
      everyPooledConnection("SET SESSION innodb_lock_wait_timeout = DEFAULT");
    }
  }

  /** Runs {@code sql} on both of the pool's connections, taken at once. */
  private void everyPooledConnection(String sql) throws Exception {
    try (Connection one = pool().getConnection(); Connection two = pool().getConnection();
        Statement s1 = one.createStatement(); Statement s2 = two.createStatement()) {
      s1.execute(sql);
      s2.execute(sql);
    }
  }
}
