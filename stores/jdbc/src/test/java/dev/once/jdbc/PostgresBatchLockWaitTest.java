package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.Completion;
import dev.once.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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
   * A table lock (what a plain {@code CREATE INDEX} takes, or {@code LOCK TABLE … IN SHARE MODE})
   * is waited for when the statement is parsed. The batch completion used to set its bound in a
   * CTE of the UPDATE, which ran only after that wait, so it waited without bound where a batch
   * claim gave up (found by review).
   */
  @Test
  void batchesBehindATableLockGiveUpToo() throws Exception {
    JdbcStore store = store();
    List<Completion> completions = completionsOf(store, "table-a", "table-b");
    try (Connection holder = pool().getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("LOCK TABLE " + table() + " IN SHARE MODE");
      }
      Future<Set<IdempotencyKey>> completing = threads().submit(() ->
          store.completeAll(completions, Instant.now(), Duration.ofHours(1), LOCK_WAIT));
      assertThat(completing).failsWithin(10, TimeUnit.SECONDS).withThrowableThat()
          .havingCause().isInstanceOf(StoreUnavailableException.class)
          .withMessageContaining("gave up after waiting 100 ms");
      Future<List<Claim>> claiming = threads().submit(() ->
          store.claimAll(List.of(request(key("table-c")), request(key("table-d"))), LOCK_WAIT));
      assertThat(claiming).failsWithin(10, TimeUnit.SECONDS).withThrowableThat()
          .havingCause().isInstanceOf(StoreUnavailableException.class)
          .withMessageContaining("gave up after waiting 100 ms");
      holder.rollback();
    }
    assertThat(lockWaitOfEveryPooledConnection()).isEqualTo("0");
    assertThat(store.completeAll(completions, Instant.now(), Duration.ofHours(1), LOCK_WAIT))
        .isEmpty();
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
