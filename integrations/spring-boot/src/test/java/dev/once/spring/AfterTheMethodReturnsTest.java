package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.PayloadTooLargeException;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Issue 14: nothing that happens after an {@link Idempotent} method returns may run it again. A
 * result that cannot be stored (its JSON throws, it is larger than {@code once.max-payload}), a
 * listener or the codec throwing an error, a transaction callback failing after the commit: the
 * method ran once and never runs again for its key; duplicates get
 * {@link OutcomeNotStoredException} (or the stored value). Lease mode on the in-memory store and on
 * PostgreSQL; the transactional join on PostgreSQL, where the result is stored in the method's
 * transaction, rolls it all back instead.
 */
class AfterTheMethodReturnsTest {

  static final String TABLE = "issue14_records";

  /** A result whose JSON throws: a getter that fails, as a lazy field not loaded would. */
  public static final class Report {
    private final String id;
    private final boolean invariantBroken;

    Report(String id, boolean invariantBroken) {
      this.id = id;
      this.invariantBroken = invariantBroken;
    }

    public String getId() {
      return id;
    }

    public String getSummary() {
      if (invariantBroken) {
        throw new AssertionError("summary and lines disagree"); // an Error: Jackson passes it on
      }
      throw new IllegalStateException("summary not loaded");
    }
  }

  /** Results that cannot be stored; every run counted. */
  public static class Reports {
    private final AtomicInteger runs = new AtomicInteger();

    public int runs() {
      return runs.get();
    }

    @Idempotent(key = "#id", scope = "reports.unserializable")
    public Report unserializable(String id) {
      runs.incrementAndGet();
      return new Report(id, false);
    }

    @Idempotent(key = "#id", scope = "reports.brokenInvariant")
    public Report brokenInvariant(String id) {
      runs.incrementAndGet();
      return new Report(id, true);
    }

    @Idempotent(key = "#id", scope = "reports.large")
    public String large(String id) {
      runs.incrementAndGet();
      return id + ":" + "x".repeat(1_000);
    }
  }

  record Debit(String id, long balance) {}

  record Statement(String id, String lines) {}

  /** Debits wallets in Spring transactions; what happens around the commit is chosen per method. */
  public static class Wallets {
    private final JdbcTemplate jdbc;
    private final AtomicInteger runs = new AtomicInteger();

    public Wallets(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    public int runs() {
      return runs.get();
    }

    public long balance(String wallet) {
      return jdbc.queryForObject("SELECT balance FROM wallet WHERE id = ?", Long.class, wallet);
    }

    /** Publishes an event after the commit; the publisher fails. */
    @Idempotent(key = "#id", scope = "wallets.debitAndPublish")
    @Transactional
    public Debit debitAndPublish(String id, String wallet, long amount) {
      runs.incrementAndGet();
      jdbc.update("UPDATE wallet SET balance = balance - ? WHERE id = ?", amount, wallet);
      TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
        @Override
        public void afterCommit() {
          throw new IllegalStateException("event bus unavailable");
        }
      });
      return new Debit(id, balance(wallet));
    }

    /** A check before the commit fails on the first run, so the transaction rolls back. */
    @Idempotent(key = "#id", scope = "wallets.debitChecked")
    @Transactional
    public Debit debitChecked(String id, String wallet, long amount) {
      int run = runs.incrementAndGet();
      jdbc.update("UPDATE wallet SET balance = balance - ? WHERE id = ?", amount, wallet);
      if (run == 1) {
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
          @Override
          public void beforeCommit(boolean readOnly) {
            throw new IllegalStateException("ledger check failed");
          }
        });
      }
      return new Debit(id, balance(wallet));
    }

    /** Joins the transaction (JDBC store on the same DataSource); its result is too large. */
    @Idempotent(key = "#id", scope = "wallets.debitWithStatement")
    @Transactional
    public Statement debitWithStatement(String id, String wallet, long amount) {
      runs.incrementAndGet();
      jdbc.update("UPDATE wallet SET balance = balance - ? WHERE id = ?", amount, wallet);
      return new Statement(id, "x".repeat(1_000));
    }

    /** Joins the transaction; its result's JSON throws. */
    @Idempotent(key = "#id", scope = "wallets.debitWithReport")
    @Transactional
    public Report debitWithReport(String id, String wallet, long amount) {
      runs.incrementAndGet();
      jdbc.update("UPDATE wallet SET balance = balance - ? WHERE id = ?", amount, wallet);
      return new Report(id, false);
    }
  }

  /** Lease mode over the store named: the in-memory store, or a JdbcStore on PostgreSQL. */
  private static ApplicationContextRunner leaseMode(String store) {
    ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.max-payload=256B")
        .withBean(Reports.class);
    return store.equals("memory")
        ? runner.withPropertyValues("once.store=memory")
        : runner.withBean(DataSource.class, TestDatabases::postgres)
            .withPropertyValues("once.store=jdbc", "once.jdbc.create-schema=true",
                "once.jdbc.table=" + TABLE);
  }

  /** Transactions on PostgreSQL; the store is the in-memory one or a JdbcStore there. */
  private static ApplicationContextRunner transactions(String store) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceTransactionManagerAutoConfiguration.class,
            TransactionAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
            OnceAutoConfiguration.class))
        .withBean(DataSource.class, TestDatabases::postgres)
        .withBean(Wallets.class)
        .withPropertyValues("once.store=" + store, "once.jdbc.create-schema=true",
            "once.jdbc.table=" + TABLE, "once.max-payload=256B");
  }

  private static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static String wallet(JdbcTemplate jdbc, long balance) {
    String id = unique("w");
    jdbc.execute("CREATE TABLE IF NOT EXISTS wallet (id text PRIMARY KEY, balance bigint NOT NULL)");
    jdbc.update("INSERT INTO wallet (id, balance) VALUES (?, ?)", id, balance);
    return id;
  }

  private static IdempotencyRecord record(IdempotencyStore store, String scope, String key) {
    return store.find(IdempotencyKey.of(scope, key)).orElseThrow();
  }

  private static void assertCompletedWithoutResult(IdempotencyStore store, String scope,
      String key, String reason) {
    IdempotencyRecord record = record(store, scope, key);
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.outcome().isNotStored()).isTrue();
    assertThat(record.outcome().notStoredReason()).contains(reason);
  }

  // -----------------------------------------------------------------------------------------------
  // lease mode

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void aResultWhoseJsonThrowsIsNotStoredAndTheMethodNeverRunsAgain(String store) {
    leaseMode(store).run(context -> {
      Reports reports = context.getBean(Reports.class);
      String id = unique("r");

      // The caller that ran the method gets its value.
      assertThat(reports.unserializable(id).getId()).isEqualTo(id);
      assertThatThrownBy(() -> reports.unserializable(id))
          .isInstanceOf(OutcomeNotStoredException.class)
          .hasMessageContaining("summary not loaded");
      assertThatThrownBy(() -> reports.unserializable(id))
          .isInstanceOf(OutcomeNotStoredException.class);

      assertThat(reports.runs()).isEqualTo(1);
      assertCompletedWithoutResult(context.getBean(IdempotencyStore.class),
          "reports.unserializable", id, "summary not loaded");
    });
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void aResultLargerThanTheMaxPayloadIsNotStoredAndTheMethodNeverRunsAgain(String store) {
    leaseMode(store).run(context -> {
      Reports reports = context.getBean(Reports.class);
      String id = unique("r");

      assertThat(reports.large(id)).startsWith(id + ":xxx").hasSize(id.length() + 1_001);
      assertThatThrownBy(() -> reports.large(id))
          .isInstanceOf(OutcomeNotStoredException.class)
          .satisfies(e -> assertThat(((OutcomeNotStoredException) e).reason())
              .contains(PayloadTooLargeException.class.getName()));

      assertThat(reports.runs()).isEqualTo(1);
      assertCompletedWithoutResult(context.getBean(IdempotencyStore.class), "reports.large", id,
          "256");
    });
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "postgres"})
  void anErrorThrownWhileEncodingTheResultDoesNotLeaveTheKeyToRunAgain(String store) {
    // Jackson passes a getter's Error through unwrapped; unguarded, it would leave the claim
    // IN_PROGRESS (the duplicate: RequestInProgressException), and after the lease, a re-run.
    leaseMode(store).run(context -> {
      Reports reports = context.getBean(Reports.class);
      String id = unique("r");

      assertThat(reports.brokenInvariant(id).getId()).isEqualTo(id);
      assertThatThrownBy(() -> reports.brokenInvariant(id))
          .isInstanceOf(OutcomeNotStoredException.class)
          .hasMessageContaining("summary and lines disagree");

      assertThat(reports.runs()).isEqualTo(1);
      assertCompletedWithoutResult(context.getBean(IdempotencyStore.class),
          "reports.brokenInvariant", id, "AssertionError");
    });
  }

  @Test
  void aListenerThrowingAnErrorAfterTheMethodReturnedDoesNotMakeItRunAgain() {
    OnceListener broken = new OnceListener() {
      @Override
      public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
        throw new NoClassDefFoundError("io/example/alerts/Pager"); // a missing optional jar
      }

      @Override
      public void onCompleted(IdempotencyKey key, long token, java.time.Duration elapsed) {
        throw new AssertionError("listener bug");
      }
    };
    leaseMode("memory").withBean("brokenListener", OnceListener.class, () -> broken)
        .run(context -> {
          Reports reports = context.getBean(Reports.class);
          String id = unique("r");

          assertThat(reports.large(id)).startsWith(id + ":");
          assertThatThrownBy(() -> reports.large(id))
              .isInstanceOf(OutcomeNotStoredException.class);
          assertThat(reports.runs()).isEqualTo(1);
        });
  }

  @Test
  void aFailureAfterTheCommitDoesNotRunTheMethodAgain() {
    transactions("memory").run(context -> {
      Wallets wallets = context.getBean(Wallets.class);
      String wallet = wallet(context.getBean(JdbcTemplate.class), 1_000);
      String id = unique("d");

      // The debit committed; then an afterCommit callback threw: the caller sees its exception.
      assertThatThrownBy(() -> wallets.debitAndPublish(id, wallet, 300))
          .isInstanceOf(IllegalStateException.class).hasMessage("event bus unavailable");
      assertThat(wallets.balance(wallet)).isEqualTo(700);

      // A retry gets the stored result: the debit is not made again.
      assertThat(wallets.debitAndPublish(id, wallet, 300)).isEqualTo(new Debit(id, 700));
      assertThat(wallets.runs()).isEqualTo(1);
      assertThat(wallets.balance(wallet)).isEqualTo(700);
      assertThat(record(context.getBean(IdempotencyStore.class), "wallets.debitAndPublish", id)
          .status()).isEqualTo(Status.COMPLETED);
    });
  }

  @Test
  void aFailureThatRollsTheTransactionBackStillReleasesTheKey() {
    transactions("memory").run(context -> {
      Wallets wallets = context.getBean(Wallets.class);
      String wallet = wallet(context.getBean(JdbcTemplate.class), 1_000);
      String id = unique("d");

      // The method returned, but the commit did not happen: its writes are gone, so it may run.
      assertThatThrownBy(() -> wallets.debitChecked(id, wallet, 300))
          .isInstanceOf(IllegalStateException.class).hasMessage("ledger check failed");
      assertThat(wallets.balance(wallet)).isEqualTo(1_000);
      assertThat(record(context.getBean(IdempotencyStore.class), "wallets.debitChecked", id)
          .status()).isEqualTo(Status.FAILED);

      assertThat(wallets.debitChecked(id, wallet, 300)).isEqualTo(new Debit(id, 700));
      assertThat(wallets.debitChecked(id, wallet, 300)).isEqualTo(new Debit(id, 700));
      assertThat(wallets.runs()).isEqualTo(2);
      assertThat(wallets.balance(wallet)).isEqualTo(700);
    });
  }

  // -----------------------------------------------------------------------------------------------
  // the transactional join (TransactionalOnce in the Spring transaction)

  /**
   * Joined, the result is encoded inside the method's transaction: one that cannot be stored rolls
   * back the method's writes with the claim (to the savepoint before it), and the transaction
   * rolls back. Nothing of the run persists, so the retry's run is the first that counts; it
   * fails the same way, and the debit is never made, let alone twice.
   */
  @Test
  void joinedAResultThatCannotBeStoredCommitsTheWritesWithAMarkerAndNeverRunsAgain() {
    transactions("jdbc").run(context -> {
      Wallets wallets = context.getBean(Wallets.class);
      IdempotencyStore store = context.getBean(IdempotencyStore.class);
      String wallet = wallet(context.getBean(JdbcTemplate.class), 1_000);
      String large = unique("d");
      String unserializable = unique("d");

      // The first calls run, commit their debit with the key, and return the value.
      assertThat(wallets.debitWithStatement(large, wallet, 300).id()).isEqualTo(large);
      assertThat(wallets.debitWithReport(unserializable, wallet, 300).getId())
          .isEqualTo(unserializable);
      // Duplicates are told the value was not kept; nothing runs again.
      assertThatThrownBy(() -> wallets.debitWithStatement(large, wallet, 300))
          .isInstanceOf(OutcomeNotStoredException.class)
          .hasMessageContaining(PayloadTooLargeException.class.getName());
      assertThatThrownBy(() -> wallets.debitWithReport(unserializable, wallet, 300))
          .isInstanceOf(OutcomeNotStoredException.class)
          .hasMessageContaining("summary not loaded");

      assertThat(wallets.runs()).isEqualTo(2);
      assertThat(wallets.balance(wallet)).isEqualTo(400);
      assertCompletedWithoutResult(store, "wallets.debitWithStatement", large,
          PayloadTooLargeException.class.getName());
      assertCompletedWithoutResult(store, "wallets.debitWithReport", unserializable,
          "summary not loaded");
    });
  }

}
