package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.IdempotencyKey;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What needs row locks and a server: duplicates waiting for (or refused by) the original's
 * transaction, and backends killed in the middle of a claim or of the business work. Every wait
 * is bounded; nothing sleeps to let time pass (the polls below wait for a condition).
 */
abstract class ServerTransactionalOnceContract extends TransactionalOnceContract {

  static final long WAIT_SECONDS = 30;

  private ExecutorService threads;

  @BeforeEach
  void startThreads() {
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void stopThreads() throws InterruptedException {
    threads.shutdownNow();
    assertThat(threads.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
  }

  /** The server's id of the session behind {@code c}. */
  abstract long backendId(Connection c) throws SQLException;

  /** Ends the session {@code backendId} from another connection, as an operator would. */
  abstract void kill(long backendId) throws SQLException;

  /** The ids of sessions waiting for a lock {@code holder} holds. */
  abstract java.util.List<Long> waitersOn(Connection probe, long holder) throws SQLException;

  /** Pause between two looks at the server's lock tables. */
  long pollMillis() {
    return 5;
  }

  /** What the server says about locks, for a failure message. */
  String diagnose(Connection probe) throws SQLException {
    return "";
  }

  /** Waits (bounded) until a session waits for a lock {@code holder} holds; returns its id. */
  long awaitWaiterOn(long holder, Future<?> waiter) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    try (Connection probe = dataSource().getConnection()) {
      while (System.nanoTime() < deadline) {
        if (waiter.isDone()) {
          throw new AssertionError("it did not wait for the lock: " + outcome(waiter));
        }
        java.util.List<Long> waiting = waitersOn(probe, holder);
        if (!waiting.isEmpty()) {
          assertThat(waiting).hasSize(1);
          return waiting.get(0);
        }
        Thread.sleep(pollMillis());
      }
      throw new AssertionError("nothing ever waited for the lock of session " + holder + ": "
          + diagnose(probe));
    }
  }

  private static String outcome(Future<?> f) {
    try {
      return String.valueOf(f.get());
    } catch (ExecutionException e) {
      return e.getCause().toString();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /** The original, holding its claim of {@code key} open until {@code release}. */
  private final class Original {
    final CountDownLatch inWork = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final AtomicLong backend = new AtomicLong();
    final Future<Result<String>> result;

    Original(TransactionalOnce once, IdempotencyKey key) {
      result = threads.submit(() -> once.call(key, FP, Codecs.utf8(), tx -> {
        String value = book(tx);
        backend.set(backendId(tx.connection()));
        inWork.countDown();
        if (!release.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
          throw new IllegalStateException("never released");
        }
        return value;
      }));
    }

    void awaitInWork() throws Exception {
      if (!inWork.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
        throw new AssertionError("the original never ran: " + outcome(result));
      }
    }
  }

  // ----------------------------------------------------------------------------------------------
  // lock waits

  @Test
  void aConcurrentDuplicateWaitsForTheOriginalsCommitThenReplaysIt() throws Exception {
    TransactionalOnce once = once().lockWait(Duration.ofSeconds(WAIT_SECONDS)).build();
    IdempotencyKey key = key("waits");
    Original original = new Original(once, key);
    original.awaitInWork();
    AtomicInteger duplicateRuns = new AtomicInteger();

    Future<Result<String>> duplicate = threads.submit(() -> once.call(key, FP, Codecs.utf8(),
        tx -> {
          duplicateRuns.incrementAndGet();
          return book(tx);
        }));
    awaitWaiterOn(original.backend.get(), duplicate);
    original.release.countDown();

    Result<String> first = original.result.get(WAIT_SECONDS, TimeUnit.SECONDS);
    Result<String> second = duplicate.get(WAIT_SECONDS, TimeUnit.SECONDS);
    assertThat(first.replayed()).isFalse();
    assertThat(second).isEqualTo(new Result<>(first.value(), true, first.token()));
    assertThat(duplicateRuns).hasValue(0);
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void withNoLockWaitAConcurrentDuplicateIsAnsweredInProgressAtOnce() throws Exception {
    IdempotencyKey key = key("no-wait");
    Original original = new Original(once().build(), key);
    original.awaitInWork();
    TransactionalOnce impatient = once().lockWait(Duration.ZERO).build();

    long started = System.nanoTime();
    Future<Result<String>> duplicate =
        threads.submit(() -> impatient.call(key, FP, Codecs.utf8(), this::book));
    Throwable thrown = causeOf(duplicate);
    Duration took = Duration.ofNanos(System.nanoTime() - started);

    assertThat(thrown).isInstanceOf(RequestInProgressException.class)
        .hasCauseInstanceOf(SQLException.class);
    assertThat(((RequestInProgressException) thrown).retryAfter()).isEqualTo(Duration.ofSeconds(1));
    assertThat(took).isLessThan(Duration.ofSeconds(2)); // not the 5 s default, nor a lock wait
    original.release.countDown();
    Result<String> first = original.result.get(WAIT_SECONDS, TimeUnit.SECONDS);
    assertThat(impatient.call(key, FP, Codecs.utf8(), this::book))
        .isEqualTo(new Result<>(first.value(), true, first.token()));
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aBoundedLockWaitRunsOutIntoInProgress() throws Exception {
    IdempotencyKey key = key("bounded");
    Original original = new Original(once().build(), key);
    original.awaitInWork();
    Duration lockWait = Duration.ofMillis(300); // MariaDB waits whole seconds: 1 s
    TransactionalOnce bounded = once().lockWait(lockWait).build();

    long started = System.nanoTime();
    Throwable thrown = causeOf(threads.submit(() -> bounded.call(key, FP, Codecs.utf8(),
        this::book)));
    Duration took = Duration.ofNanos(System.nanoTime() - started);

    assertThat(thrown).isInstanceOf(RequestInProgressException.class);
    assertThat(took).isGreaterThanOrEqualTo(lockWait).isLessThan(Duration.ofSeconds(4));
    original.release.countDown();
    assertThat(original.result.get(WAIT_SECONDS, TimeUnit.SECONDS).replayed()).isFalse();
  }

  /**
   * A takeover (of a lease-mode FAILED record) needs the row lock: the locked read waits for it,
   * or with no lock wait answers at once.
   */
  @Test
  void aTakeoverWaitsForTheRowLockOrAnswersAtOnce() throws Exception {
    IdempotencyKey key = key("takeover-locked");
    long token = failedLeaseModeRecord(key);
    try (Connection holder = dataSource().getConnection()) {
      holder.setAutoCommit(false);
      lockRecord(holder, key);

      Throwable refused = causeOf(threads.submit(() -> once().lockWait(Duration.ZERO).build()
          .call(key, FP, Codecs.utf8(), this::book)));
      assertThat(refused).isInstanceOf(RequestInProgressException.class);

      Future<Result<String>> patient = threads.submit(() -> once()
          .lockWait(Duration.ofSeconds(WAIT_SECONDS)).build().call(key, FP, Codecs.utf8(),
              this::book));
      awaitWaiterOn(backendId(holder), patient);
      holder.commit();

      assertThat(patient.get(WAIT_SECONDS, TimeUnit.SECONDS).token()).isEqualTo(token + 1);
    }
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  /** The session's lock wait setting as the database shows it. */
  abstract String lockTimeout(Connection c) throws SQLException;

  /** Sets a lock wait of the caller's own for the current transaction (MariaDB: session). */
  abstract void setLockTimeoutInTransaction(Connection c, int seconds) throws SQLException;

  /** Undoes {@link #setLockTimeoutInTransaction} where it outlives the transaction. */
  abstract void resetLockTimeout(Connection c) throws SQLException;

  @Test
  void theLockWaitBoundsTheClaimOnlyNotTheBusinessSql() throws Exception {
    TransactionalOnce once = once().lockWait(Duration.ZERO).build();
    String session;
    try (Connection c = dataSource().getConnection()) {
      session = lockTimeout(c);
    }
    AtomicReference<String> inside = new AtomicReference<>();
    once.call(key("own-timeout"), FP, Codecs.utf8(), tx -> {
      inside.set(lockTimeout(tx.connection()));
      return book(tx);
    });
    assertThat(inside.get()).isEqualTo(session);

    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      try {
        setLockTimeoutInTransaction(c, 7);
        String callers = lockTimeout(c);
        assertThat(callers).isNotEqualTo(session);
        once.callInTransaction(c, key("callers-timeout"), FP, Codecs.utf8(), tx -> {
          inside.set(lockTimeout(tx.connection()));
          return book(tx);
        });
        assertThat(inside.get()).isEqualTo(callers);
        assertThat(lockTimeout(c)).isEqualTo(callers);
        c.commit();
      } finally {
        resetLockTimeout(c);
        c.setAutoCommit(true);
      }
    }
  }

  // ----------------------------------------------------------------------------------------------
  // killed backends

  @Test
  void aLeaseModeClaimWhoseBackendIsKilledMidClaimFailsCleanlyAndARetrySucceeds()
      throws Exception {
    IdempotencyKey key = key("killed-lease-claim");
    long token = failedLeaseModeRecord(key);
    IdempotencyRecord before = record(key);
    Instant later = Instant.now();
    try (Connection holder = dataSource().getConnection()) {
      holder.setAutoCommit(false);
      lockRecord(holder, key);
      Future<Claim> claim = threads.submit(() -> store().claim(request(key, later)));
      kill(awaitWaiterOn(backendId(holder), claim));

      Throwable thrown = causeOf(claim);
      assertThat(thrown).isInstanceOf(StoreUnavailableException.class)
          .hasMessageStartingWith("claim on " + key + " failed: ")
          .hasCauseInstanceOf(SQLException.class);
      holder.rollback();
    }
    assertThat(record(key)).isEqualTo(before);

    Claim retry = store().claim(request(key, later));
    assertThat(retry).isInstanceOfSatisfying(Claim.Acquired.class,
        a -> assertThat(a.token()).isEqualTo(token + 1));
  }

  @Test
  void aTransactionalClaimWhoseBackendIsKilledMidClaimFailsCleanlyAndARetrySucceeds()
      throws Exception {
    IdempotencyKey key = key("killed-tx-claim");
    long token = failedLeaseModeRecord(key);
    IdempotencyRecord before = record(key);
    TransactionalOnce once = once().lockWait(Duration.ofSeconds(WAIT_SECONDS)).build();
    AtomicInteger runs = new AtomicInteger();
    try (Connection holder = dataSource().getConnection()) {
      holder.setAutoCommit(false);
      lockRecord(holder, key);
      Future<Result<String>> call = threads.submit(() -> once.call(key, FP, Codecs.utf8(),
          tx -> {
            runs.incrementAndGet();
            return book(tx);
          }));
      kill(awaitWaiterOn(backendId(holder), call));

      Throwable thrown = causeOf(call);
      assertThat(thrown).isInstanceOf(StoreUnavailableException.class)
          .hasMessageStartingWith("claim on " + key + " failed: ")
          .hasCauseInstanceOf(SQLException.class);
      assertThat(((StoreUnavailableException) thrown).mayHaveBeenApplied())
          .as("a claim's transaction never reached its commit").isFalse();
      holder.rollback();
    }
    assertThat(runs).hasValue(0);
    assertThat(record(key)).isEqualTo(before);
    assertThat(ledgerRows(key)).isZero();

    Result<String> retry = once.call(key, FP, Codecs.utf8(), this::book);
    assertThat(retry.token()).isEqualTo(token + 1);
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aBackendKilledWhileTheLogicRunsLeavesNothingAndARetrySucceeds() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("killed-in-work");
    Original original = new Original(once, key);
    original.awaitInWork();

    kill(original.backend.get());
    original.release.countDown(); // the logic returns; storing its outcome meets the dead session

    Throwable thrown = causeOf(original.result);
    assertThat(thrown).isInstanceOf(StoreUnavailableException.class)
        .hasMessageStartingWith("complete on " + key + " failed: ")
        .hasMessageContaining("connection was lost")
        .hasCauseInstanceOf(SQLException.class);
    assertThat(((StoreUnavailableException) thrown).mayHaveBeenApplied())
        .as("the connection went while the completion and commit were under way").isTrue();
    assertNothingStored(key);
    assertThat(once.call(key, FP, Codecs.utf8(), this::book).replayed()).isFalse();
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aBackendKilledUnderTheLogicsSqlPassesItsErrorThroughAndLeavesNothing() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("killed-under-sql");
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch killed = new CountDownLatch(1);
    AtomicLong backend = new AtomicLong();
    Future<Result<String>> call = threads.submit(() -> once.call(key, FP, Codecs.utf8(), tx -> {
      book(tx);
      backend.set(backendId(tx.connection()));
      inWork.countDown();
      if (!killed.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
        throw new IllegalStateException("never killed");
      }
      return book(tx); // its next statement meets the dead session
    }));
    assertThat(inWork.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
    kill(backend.get());
    killed.countDown();

    assertThat(causeOf(call)).as("the logic's own SQLException, unchanged")
        .isInstanceOf(SQLException.class);
    assertNothingStored(key);
    assertThat(once.call(key, FP, Codecs.utf8(), this::book).replayed()).isFalse();
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aBackendKilledInTheCallersTransactionLeavesNothing() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("killed-joined");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      insertLedger(c, key + "/caller", 0, 1);
      long id = backendId(c);

      assertThatThrownBy(() -> once.callInTransaction(c, key, FP, Codecs.utf8(), tx -> {
        String value = book(tx);
        kill(id);
        return value;
      })).isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).as("never committed here").isFalse())
          .hasMessageContaining("the caller's transaction is lost")
          .hasCauseInstanceOf(SQLException.class);
    }
    assertNothingStored(key);
    assertThat(once.call(key, FP, Codecs.utf8(), this::book).replayed()).isFalse();
  }

  // ----------------------------------------------------------------------------------------------

  private static ClaimRequest request(IdempotencyKey key, Instant now) {
    return new ClaimRequest(key, FP, now, Duration.ofSeconds(30), Duration.ofHours(1));
  }

  /** A record that lease mode claimed and failed: the next claim must take it over. */
  long failedLeaseModeRecord(IdempotencyKey key) {
    Instant now = Instant.now().minusSeconds(1);
    long token = ((Claim.Acquired) store().claim(request(key, now))).token();
    store().fail(key, token, "java.io.IOException: failed in lease mode", now,
        Duration.ofHours(1));
    return token;
  }

  void lockRecord(Connection c, IdempotencyKey key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT token FROM " + store().table()
        + " WHERE scope = ? AND tenant = ? AND idem_key = ? FOR UPDATE")) {
      ps.setString(1, key.scope());
      ps.setString(2, key.tenant());
      ps.setString(3, key.key());
      ps.executeQuery().close();
    }
  }

  /** What {@code f} failed with (bounded wait). */
  static Throwable causeOf(Future<?> f) throws Exception {
    try {
      Object value = f.get(WAIT_SECONDS, TimeUnit.SECONDS);
      throw new AssertionError("expected a failure, got " + value);
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }
}
