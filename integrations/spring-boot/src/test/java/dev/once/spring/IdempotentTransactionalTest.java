package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.IdempotencyKey;
import dev.once.ReplayedFailureException;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link Idempotent} with a JDBC store on embedded PostgreSQL: a {@code @Transactional} method joins
 * the Spring transaction (claim, business SQL and outcome commit or roll back together); a method
 * without a transaction runs in lease mode.
 */
class IdempotentTransactionalTest {

  static final String TABLE = "spring_tx_records";

  record Debit(String id, long balance) {}

  static class InsufficientFunds extends RuntimeException {
    private static final long serialVersionUID = 1L;

    InsufficientFunds(String wallet) {
      super("insufficient funds in " + wallet);
    }
  }

  /** Debits wallets with JdbcTemplate, in Spring transactions. */
  public static class Wallets {
    private final JdbcTemplate jdbc;
    private final DataSource dataSource;
    private final AtomicInteger runs = new AtomicInteger();
    private volatile String seen;

    public Wallets(JdbcTemplate jdbc, DataSource dataSource) {
      this.jdbc = jdbc;
      this.dataSource = dataSource;
    }

    public int runs() {
      return runs.get();
    }

    /** What the last run saw of its own record: "inside/outside" status. */
    public String seen() {
      return seen;
    }

    @Idempotent(key = "#id", scope = "wallets.debit", terminalOn = InsufficientFunds.class)
    @Transactional(noRollbackFor = InsufficientFunds.class)
    public Debit debit(String id, String wallet, long amount) {
      runs.incrementAndGet();
      seen = jdbc.queryForObject("SELECT status FROM " + TABLE + " WHERE idem_key = ?",
          String.class, id) + "/" + statusSeenElsewhere(id);
      int updated = jdbc.update(
          "UPDATE wallet SET balance = balance - ? WHERE id = ? AND balance >= ?",
          amount, wallet, amount);
      if (updated == 0) {
        throw new InsufficientFunds(wallet);
      }
      return new Debit(id, balance(wallet));
    }

    @Idempotent(key = "#id", scope = "wallets.debitThenFail")
    @Transactional
    public Debit debitThenFail(String id, String wallet, long amount) {
      runs.incrementAndGet();
      jdbc.update("UPDATE wallet SET balance = balance - ? WHERE id = ?", amount, wallet);
      throw new IllegalStateException("ledger unavailable");
    }

    @Idempotent(key = "#id", scope = "wallets.notify")
    public String notifyOwner(String id) {
      runs.incrementAndGet();
      seen = statusSeenElsewhere(id);
      return "notified " + id;
    }

    long balance(String wallet) {
      return jdbc.queryForObject("SELECT balance FROM wallet WHERE id = ?", Long.class, wallet);
    }

    /** The record's status as another connection sees it: only what was committed. */
    private String statusSeenElsewhere(String id) {
      try (Connection c = dataSource.getConnection();
          PreparedStatement s = c.prepareStatement(
              "SELECT status FROM " + TABLE + " WHERE idem_key = ?")) {
        s.setString(1, id);
        try (ResultSet rs = s.executeQuery()) {
          return rs.next() ? rs.getString(1) : "none";
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(DataSourceTransactionManagerAutoConfiguration.class,
          TransactionAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
          OnceAutoConfiguration.class))
      .withBean(DataSource.class, TestDatabases::postgres)
      .withBean(Wallets.class)
      .withPropertyValues("once.jdbc.create-schema=true", "once.jdbc.table=" + TABLE);

  private static void wallet(JdbcTemplate jdbc, String id, long balance) {
    jdbc.execute("CREATE TABLE IF NOT EXISTS wallet (id text PRIMARY KEY, balance bigint NOT NULL)");
    jdbc.update("INSERT INTO wallet (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE"
        + " SET balance = excluded.balance", id, balance);
  }

  @Test
  void aTransactionalMethodJoinsTheSpringTransaction() {
    runner.run(context -> {
      JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
      wallet(jdbc, "w-join", 1_000);
      Wallets wallets = context.getBean(Wallets.class);

      Debit debit = wallets.debit("d-join", "w-join", 300);
      // Inside, the claim is visible on the transaction's connection and to no one else.
      assertThat(wallets.seen()).isEqualTo("IN_PROGRESS/none");
      assertThat(debit).isEqualTo(new Debit("d-join", 700));
      assertThat(wallets.debit("d-join", "w-join", 300)).isEqualTo(debit);
      assertThat(wallets.runs()).isEqualTo(1);
      assertThat(wallets.balance("w-join")).isEqualTo(700);
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("wallets.debit", "d-join")))
          .hasValueSatisfying(r -> assertThat(r.status()).isEqualTo(Status.COMPLETED));
    });
  }

  @Test
  void whenTheCallersTransactionRollsBackTheRecordGoesWithIt() {
    runner.run(context -> {
      JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
      wallet(jdbc, "w-rollback", 1_000);
      Wallets wallets = context.getBean(Wallets.class);
      TransactionTemplate tx = context.getBean(TransactionTemplate.class);

      tx.executeWithoutResult(status -> {
        wallets.debit("d-rollback", "w-rollback", 100);
        status.setRollbackOnly();
      });
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("wallets.debit", "d-rollback"))).isEmpty();
      assertThat(wallets.balance("w-rollback")).isEqualTo(1_000);

      assertThat(wallets.debit("d-rollback", "w-rollback", 100).balance()).isEqualTo(900);
      assertThat(wallets.runs()).isEqualTo(2);
    });
  }

  @Test
  void aFailureRollsBackTheDebitAndTheClaim() {
    runner.run(context -> {
      JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
      wallet(jdbc, "w-fail", 1_000);
      Wallets wallets = context.getBean(Wallets.class);
      for (int i = 0; i < 2; i++) {
        assertThatThrownBy(() -> wallets.debitThenFail("d-fail", "w-fail", 100))
            .isInstanceOf(IllegalStateException.class).hasMessage("ledger unavailable");
      }
      assertThat(wallets.runs()).isEqualTo(2);
      assertThat(wallets.balance("w-fail")).isEqualTo(1_000);
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("wallets.debitThenFail", "d-fail"))).isEmpty();
    });
  }

  @Test
  void aTerminalFailureIsStoredWhenTheTransactionCommits() {
    runner.run(context -> {
      JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
      wallet(jdbc, "w-poor", 50);
      Wallets wallets = context.getBean(Wallets.class);
      assertThatThrownBy(() -> wallets.debit("d-poor", "w-poor", 100))
          .isInstanceOf(InsufficientFunds.class);
      assertThatThrownBy(() -> wallets.debit("d-poor", "w-poor", 100))
          .isInstanceOf(ReplayedFailureException.class);
      assertThat(wallets.runs()).isEqualTo(1);
      assertThat(context.getBean(IdempotencyStore.class)
          .find(IdempotencyKey.of("wallets.debit", "d-poor")))
          .hasValueSatisfying(r -> assertThat(r.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE));
    });
  }

  @Test
  void racingDuplicatesDebitOnce() {
    runner.run(context -> {
      JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
      wallet(jdbc, "w-race", 10_000);
      Wallets wallets = context.getBean(Wallets.class);
      int threads = 8;
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Debit>> results = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
          results.add(pool.submit(() -> {
            start.await();
            return wallets.debit("d-race", "w-race", 1_000);
          }));
        }
        start.countDown();
        for (Future<Debit> result : results) {
          // A duplicate waits on the original's row lock, then replays its committed outcome.
          assertThat(result.get(30, TimeUnit.SECONDS)).isEqualTo(new Debit("d-race", 9_000));
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(wallets.runs()).isEqualTo(1);
      assertThat(wallets.balance("w-race")).isEqualTo(9_000);
    });
  }

  @Test
  void withoutATransactionTheMethodRunsInLeaseMode() {
    runner.run(context -> {
      Wallets wallets = context.getBean(Wallets.class);
      assertThat(wallets.notifyOwner("n-1")).isEqualTo("notified n-1");
      // The claim was committed on its own before the method ran.
      assertThat(wallets.seen()).isEqualTo("IN_PROGRESS");
      assertThat(wallets.notifyOwner("n-1")).isEqualTo("notified n-1");
      assertThat(wallets.runs()).isEqualTo(1);
    });
  }
}
