package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import dev.once.spi.Claim;
import dev.once.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The batch claim's bounded wait on PostgreSQL: {@code SET LOCAL lock_timeout}, in milliseconds. */
@Tag("postgres")
class PostgresBatchLockWaitTest extends BatchLockWaitContract {

  @Override
  HikariConfig database() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    return config;
  }

  @Override
  JdbcDialect dialect() {
    return JdbcDialect.POSTGRESQL;
  }

  @Override
  String boundInMessage() {
    return "100 ms";
  }

  @Override
  String sessionLockWait(Connection c) throws Exception {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW lock_timeout")) {
      rs.next();
      return rs.getString(1);
    }
  }

  @Override
  String defaultLockWait() {
    return "0";
  }

  /**
   * PostgreSQL takes a {@code lock_timeout} of at most INT_MAX ms: a longer lock wait (the SPI
   * allows any positive one) used to fail every batch, held row or not (found by review).
   */
  @Test
  void aLockWaitLongerThanPostgresqlTakesWaitsItsLongest() throws Exception {
    JdbcStore store = store();
    for (Duration wait : List.of(Duration.ofDays(30), Duration.ofSeconds(Long.MAX_VALUE),
        Duration.ofNanos(1))) {
      String k = "long-" + wait.getSeconds() + "-" + wait.getNano();
      assertThat(store.claimAll(List.of(request(key(k + "a")), request(key(k + "b"))), wait))
          .as("%s", wait).allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
    }
    assertThat(lockWaitOfEveryPooledConnection()).isEqualTo("0");
  }
}
