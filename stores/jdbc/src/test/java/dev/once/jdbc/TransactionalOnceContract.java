package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.KeyReusedException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import dev.once.testkit.Racers;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Transactional mode against one real database: exactly-once debits under racing duplicates,
 * failures, the caller's transaction, takeovers of lease-mode records. Each dialect's subclass
 * names its database; {@link ServerTransactionalOnceContract} adds lock waits and killed backends.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class TransactionalOnceContract {

  static final Fingerprint FP = Fingerprint.of("tx");

  /** A terminal business failure. */
  static final class InsufficientFunds extends Exception {
    private static final long serialVersionUID = 1L;

    InsufficientFunds(String message) {
      super(message);
    }
  }

  String wallets;
  String ledger;

  abstract JdbcDialect dialect();

  DataSource dataSource() {
    return Databases.dataSource(dialect());
  }

  JdbcStore store() {
    return Databases.store(dialect());
  }

  /** Threads racing in the wallet test. */
  int walletThreads() {
    return 16;
  }

  TransactionalOnce.Builder once() {
    return TransactionalOnce.builder(store());
  }

  /** A store like {@link #store()} (same table, same claim order) over {@code dataSource}. */
  JdbcStore.Builder storeOn(DataSource dataSource) {
    return JdbcStore.builder(dataSource).dialect(dialect()).table(store().table());
  }

  @BeforeAll
  void createBusinessTables() throws SQLException {
    wallets = Databases.uniqueTable("wallets");
    ledger = Databases.uniqueTable("ledger");
    try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + wallets + " (id INT PRIMARY KEY, balance BIGINT NOT NULL)");
      // No unique key on the event: a second debit must show as a second row, not be refused.
      s.execute("CREATE TABLE " + ledger + " (event_id VARCHAR(100) NOT NULL,"
          + " wallet_id INT NOT NULL, amount BIGINT NOT NULL)");
    }
    Databases.dropAtExit(dataSource(), wallets);
    Databases.dropAtExit(dataSource(), ledger);
  }

  static IdempotencyKey key(String k) {
    return IdempotencyKey.of("tx." + UUID.randomUUID().toString().substring(0, 8), k);
  }

  /** The logic of most tests: one ledger row for {@code key}. */
  String book(Transaction tx) throws SQLException {
    insertLedger(tx.connection(), tx.idempotencyKey().toString(), 0, 1);
    return "booked " + tx.idempotencyKey().key();
  }

  void insertLedger(Connection c, String event, int wallet, long amount) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + ledger + " (event_id, wallet_id, amount) VALUES (?, ?, ?)")) {
      ps.setString(1, event);
      ps.setInt(2, wallet);
      ps.setLong(3, amount);
      ps.executeUpdate();
    }
  }

  long ledgerRows(String eventPrefix) throws SQLException {
    return count("SELECT count(*) FROM " + ledger + " WHERE event_id LIKE ?", eventPrefix + "%");
  }

  long ledgerRows(IdempotencyKey key) throws SQLException {
    return ledgerRows(key.toString());
  }

  long count(String sql, Object... params) throws SQLException {
    try (Connection c = dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  IdempotencyRecord record(IdempotencyKey key) {
    return store().find(key).orElseThrow(() -> new AssertionError("no record of " + key));
  }

  void assertNothingStored(IdempotencyKey key) throws SQLException {
    assertThat(store().find(key)).as("record of " + key).isEmpty();
    assertThat(ledgerRows(key)).as("business rows of " + key).isZero();
  }

  // ----------------------------------------------------------------------------------------------
  // exactly once

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void everyWalletIsDebitedExactlyOnceWhateverRacingDuplicatesDo(Racers racers) throws Exception {
    int events = 1_000;
    int walletCount = 20;
    int copies = 3;
    long initial = 1_000_000;
    String scope = "wallet." + UUID.randomUUID().toString().substring(0, 8);
    try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("DELETE FROM " + wallets);
      for (int w = 1; w <= walletCount; w++) {
        s.execute("INSERT INTO " + wallets + " (id, balance) VALUES (" + w + ", " + initial + ")");
      }
    }
    long[] expected = new long[walletCount + 1];
    List<Integer> deliveries = new ArrayList<>();
    for (int e = 0; e < events; e++) {
      expected[wallet(e, walletCount)] += amount(e);
      for (int copy = 0; copy < copies; copy++) {
        deliveries.add(e);
      }
    }
    // Shuffled in windows, so that the copies of an event arrive close together and race.
    Random random = new Random(42);
    for (int from = 0; from < deliveries.size(); from += 48) {
      Collections.shuffle(deliveries.subList(from, Math.min(deliveries.size(), from + 48)), random);
    }
    ConcurrentLinkedQueue<Integer> queue = new ConcurrentLinkedQueue<>(deliveries);
    TransactionalOnce once = once().build();
    AtomicInteger fresh = new AtomicInteger();
    AtomicInteger replayed = new AtomicInteger();
    AtomicInteger redelivered = new AtomicInteger();
    Map<Integer, String> values = new ConcurrentHashMap<>();
    List<Throwable> errors = new CopyOnWriteArrayList<>();
    int threads = walletThreads();
    ExecutorService pool = racers.pool(threads);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        workers.add(pool.submit(() -> {
          go.await();
          for (Integer e = queue.poll(); e != null; e = queue.poll()) {
            int event = e;
            String id = scope + ":" + event;
            try {
              Result<String> r = once.call(IdempotencyKey.of(scope, "event-" + event),
                  Fingerprint.of(id), Codecs.utf8(),
                  tx -> debit(tx, id, wallet(event, walletCount), amount(event)));
              (r.replayed() ? replayed : fresh).incrementAndGet();
              String first = values.putIfAbsent(event, r.value());
              if (first != null && !first.equals(r.value())) {
                errors.add(new AssertionError("event " + event + " answered " + first + " and "
                    + r.value()));
              }
            } catch (RequestInProgressException busy) {
              redelivered.incrementAndGet(); // as a broker would: deliver it again later
              queue.add(event);
            } catch (Throwable failure) {
              errors.add(failure);
            }
          }
          return null;
        }));
      }
      go.countDown();
      for (Future<?> worker : workers) {
        worker.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    assertThat(errors).isEmpty();
    assertThat(fresh.get()).as("executions").isEqualTo(events);
    assertThat(replayed.get()).as("replays").isEqualTo(events * (copies - 1));
    try (Connection c = dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id, balance FROM " + wallets + " ORDER BY id")) {
      int seen = 0;
      while (rs.next()) {
        int w = rs.getInt(1);
        assertThat(rs.getLong(2)).as("balance of wallet " + w).isEqualTo(initial - expected[w]);
        seen++;
      }
      assertThat(seen).isEqualTo(walletCount);
    }
    assertThat(ledgerRows(scope + ":")).as("ledger rows").isEqualTo(events);
    assertThat(count("SELECT count(DISTINCT event_id) FROM " + ledger + " WHERE event_id LIKE ?",
        scope + ":%")).isEqualTo(events);
    String records = "SELECT count(*) FROM " + store().table() + " WHERE scope = ?";
    assertThat(count(records, scope)).as("records").isEqualTo(events);
    assertThat(count(records + " AND status = 'COMPLETED' AND outcome_kind = 'SUCCESS'", scope))
        .as("COMPLETED records").isEqualTo(events);
  }

  private static int wallet(int event, int walletCount) {
    return event % walletCount + 1;
  }

  private static long amount(int event) {
    return 1 + event % 13;
  }

  private String debit(Transaction tx, String event, int wallet, long amount)
      throws SQLException {
    try (PreparedStatement ps = tx.connection().prepareStatement(
        "UPDATE " + wallets + " SET balance = balance - ? WHERE id = ?")) {
      ps.setLong(1, amount);
      ps.setInt(2, wallet);
      if (ps.executeUpdate() != 1) {
        throw new SQLException("no wallet " + wallet);
      }
    }
    insertLedger(tx.connection(), event, wallet, amount);
    return "debited " + amount + " from " + wallet + " for " + event;
  }

  @Test
  void aDuplicateIsAnsweredWithTheStoredOutcomeWithoutRunningAgain() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("twice");
    AtomicInteger runs = new AtomicInteger();

    Result<String> first = once.call(key, FP, Codecs.utf8(), tx -> {
      runs.incrementAndGet();
      return book(tx);
    });
    Result<String> second = once.call(key, FP, Codecs.utf8(), tx -> {
      runs.incrementAndGet();
      return book(tx);
    });

    assertThat(first.replayed()).isFalse();
    assertThat(second).isEqualTo(new Result<>("booked twice", true, first.token()));
    assertThat(once.execute(key, FP, Codecs.utf8(), this::book)).isEqualTo("booked twice");
    assertThat(runs).hasValue(1);
    assertThat(ledgerRows(key)).isEqualTo(1);
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.COMPLETED);
    assertThat(r.token()).isEqualTo(first.token());
    assertThat(r.outcome()).isEqualTo(Outcome.success(Codecs.utf8().mediaType(),
        "booked twice".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  @Test
  void aRetryableFailureLeavesNoRecordAndNoRowsAndARetrySucceeds() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("retryable");
    IOException boom = new IOException("downstream hiccup");

    Throwable thrown = catchThrowable(() -> once.call(key, FP, Codecs.utf8(), tx -> {
      book(tx);
      throw boom;
    }));

    assertThat(thrown).isSameAs(boom); // the checked exception, unchanged
    assertNothingStored(key);
    Result<String> retry = once.call(key, FP, Codecs.utf8(), this::book);
    assertThat(retry.replayed()).isFalse();
    assertThat(ledgerRows(key)).isEqualTo(1);
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void aTerminalFailureIsStoredWhileItsBusinessWritesRollBack() throws Exception {
    TransactionalOnce once = once()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class)).build();
    IdempotencyKey key = key("terminal");
    InsufficientFunds refused = new InsufficientFunds("balance 3 < 5");
    AtomicInteger runs = new AtomicInteger();

    Throwable thrown = catchThrowable(() -> once.call(key, FP, Codecs.utf8(), tx -> {
      runs.incrementAndGet();
      book(tx);
      throw refused;
    }));

    assertThat(thrown).isSameAs(refused);
    assertThat(ledgerRows(key)).isZero();
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.COMPLETED);
    assertThat(r.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    for (int duplicate = 0; duplicate < 2; duplicate++) {
      assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), tx -> {
        runs.incrementAndGet();
        return book(tx);
      })).isInstanceOfSatisfying(ReplayedFailureException.class, e -> {
        assertThat(e.failureType()).isEqualTo(InsufficientFunds.class.getName());
        assertThat(e.failureMessage()).isEqualTo("balance 3 < 5");
      });
    }
    assertThat(runs).hasValue(1);
    assertThat(ledgerRows(key)).isZero();
  }

  @Test
  void retryableFailuresUnderAPolicyWithTerminalRulesStillRollEverythingBack() throws Exception {
    TransactionalOnce once = once()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class)).build();
    IdempotencyKey key = key("retryable-among-terminal");

    assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), tx -> {
      book(tx);
      throw new IllegalStateException("transient");
    })).isInstanceOf(IllegalStateException.class).hasMessage("transient");

    assertNothingStored(key);
    assertThat(once.call(key, FP, Codecs.utf8(), this::book).replayed()).isFalse();
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aKeyReusedWithAnotherFingerprintIsRefusedAndNothingChanges() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("reused");
    Result<String> first = once.call(key, FP, Codecs.utf8(), this::book);

    assertThatThrownBy(() -> once.call(key, Fingerprint.of("other"), Codecs.utf8(), this::book))
        .isInstanceOf(KeyReusedException.class);

    assertThat(record(key).token()).isEqualTo(first.token());
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  /** Records what the listener hears when a value is not stored. */
  static final class NotStoredListener implements OnceListener {
    final List<String> events = new CopyOnWriteArrayList<>();

    @Override
    public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
      events.add("not-stored " + key.key() + " " + cause.getClass().getSimpleName());
    }

    @Override
    public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
      events.add("completed " + key.key());
    }

    @Override
    public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
      events.add("failed " + key.key());
    }
  }

  /** A codec whose encode always throws. */
  static final dev.once.Codec<String> BROKEN_CODEC = new dev.once.Codec<>() {
    @Override
    public String mediaType() {
      return "text/plain";
    }

    @Override
    public byte[] encode(String value) {
      throw new IllegalStateException("cannot encode " + value);
    }

    @Override
    public String decode(byte[] bytes) {
      throw new AssertionError("nothing was stored to decode");
    }
  };

  @Test
  void anOversizedValueCompletesTheKeyWithoutItAndTheLogicNeverRunsAgain() throws Exception {
    NotStoredListener listener = new NotStoredListener();
    TransactionalOnce once = once().maxPayloadBytes(4).listener(listener).build();
    IdempotencyKey key = key("oversized");
    AtomicInteger runs = new AtomicInteger();

    Result<String> first = once.call(key, FP, Codecs.utf8(), tx -> {
      runs.incrementAndGet();
      return book(tx);
    });

    // The value is returned, the business row and the marker commit together.
    assertThat(first).isEqualTo(new Result<>("booked oversized", false, first.token()));
    assertThat(ledgerRows(key)).isEqualTo(1);
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.COMPLETED);
    assertThat(r.token()).isEqualTo(first.token());
    assertThat(r.outcome().isNotStored()).isTrue();
    assertThat(r.outcome().notStoredReason()).contains("PayloadTooLargeException");
    assertThat(listener.events).containsExactly(
        "not-stored oversized PayloadTooLargeException", "completed oversized");
    for (int duplicate = 0; duplicate < 2; duplicate++) {
      assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), tx -> {
        runs.incrementAndGet();
        return book(tx);
      })).isInstanceOfSatisfying(OutcomeNotStoredException.class, e -> {
        assertThat(e.key()).isEqualTo(key);
        assertThat(e.reason()).contains("PayloadTooLargeException");
      });
    }
    assertThat(runs).hasValue(1);
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aValueItsCodecCannotEncodeCompletesTheKeyWithoutIt() throws Exception {
    NotStoredListener listener = new NotStoredListener();
    TransactionalOnce once = once().listener(listener).build();
    IdempotencyKey key = key("unencodable");

    assertThat(once.execute(key, FP, BROKEN_CODEC, this::book)).isEqualTo("booked unencodable");

    assertThat(ledgerRows(key)).isEqualTo(1);
    assertThat(record(key).outcome().notStoredReason())
        .isEqualTo("java.lang.IllegalStateException: cannot encode booked unencodable");
    assertThat(listener.events).containsExactly(
        "not-stored unencodable IllegalStateException", "completed unencodable");
    assertThatThrownBy(() -> once.execute(key, FP, BROKEN_CODEC, this::book))
        .isInstanceOf(OutcomeNotStoredException.class);
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aValueNotStoredInTheCallersTransactionCommitsWithTheCaller() throws Exception {
    TransactionalOnce once = once().maxPayloadBytes(4).build();
    IdempotencyKey key = key("joined-oversized");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);

      Result<String> r = once.callInTransaction(c, key, FP, Codecs.utf8(), this::book);

      assertThat(r.value()).isEqualTo("booked joined-oversized");
      assertThat(store().find(key)).as("not committed yet").isEmpty();
      c.commit();
      c.setAutoCommit(true);
    }
    assertThat(record(key).outcome().isNotStored()).isTrue();
    assertThat(ledgerRows(key)).isEqualTo(1);
    assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), this::book))
        .isInstanceOf(OutcomeNotStoredException.class);
  }

  // ----------------------------------------------------------------------------------------------
  // records left by lease mode on the same table

  @Test
  void takesOverAFailedLeaseModeRecordWithTheNextToken() throws Exception {
    ManualClock clock = new ManualClock(Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MICROS));
    IdempotencyKey key = key("failed-by-lease-mode");
    long token = ((Claim.Acquired) store().claim(new ClaimRequest(key, FP, clock.instant(),
        Duration.ofSeconds(30), Duration.ofHours(1)))).token();
    store().fail(key, token, "java.io.IOException: lease mode failed", clock.instant(),
        Duration.ofHours(1));

    Result<String> r = once().clock(clock).build().call(key, FP, Codecs.utf8(), tx -> {
      assertThat(tx.token()).isEqualTo(token + 1);
      return book(tx);
    });

    assertThat(r.token()).isEqualTo(token + 1);
    IdempotencyRecord after = record(key);
    assertThat(after.status()).isEqualTo(Status.COMPLETED);
    assertThat(after.token()).isEqualTo(token + 1);
    assertThat(after.attempts()).isEqualTo(2);
    assertThat(ledgerRows(key)).isEqualTo(1);
  }

  @Test
  void aLiveLeaseIsInProgressAndAnExpiredOneIsTakenOver() throws Exception {
    ManualClock clock = new ManualClock(Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MICROS));
    IdempotencyKey key = key("leased");
    Claim.Acquired leased = (Claim.Acquired) store().claim(new ClaimRequest(key, FP,
        clock.instant(), Duration.ofSeconds(30), Duration.ofHours(1)));
    TransactionalOnce once = once().clock(clock).build();

    assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), this::book))
        .isInstanceOfSatisfying(RequestInProgressException.class, e -> {
          assertThat(e.leaseUntil()).isEqualTo(leased.leaseUntil());
          assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(30));
        });
    assertThat(ledgerRows(key)).isZero();

    clock.advance(Duration.ofSeconds(30));
    Result<String> r = once.call(key, FP, Codecs.utf8(), this::book);

    assertThat(r.token()).isEqualTo(leased.token() + 1);
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    assertThat(store().find(key).orElseThrow().token()).isEqualTo(leased.token() + 1);
  }

  // ----------------------------------------------------------------------------------------------
  // the caller's transaction

  @Test
  void callInTransactionCommitsWithTheCaller() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("joined-commit");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      insertLedger(c, key + "/caller", 0, 1);

      Result<String> r = once.callInTransaction(c, key, FP, Codecs.utf8(), this::book);

      assertThat(r.replayed()).isFalse();
      assertThat(store().find(key)).as("not committed yet").isEmpty();
      c.commit();
      c.setAutoCommit(true);
    }
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    assertThat(ledgerRows(key)).isEqualTo(2); // the caller's row and the logic's
  }

  @Test
  void callInTransactionRollsBackWithTheCaller() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("joined-rollback");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      once.callInTransaction(c, key, FP, Codecs.utf8(), this::book);
      c.rollback();
      c.setAutoCommit(true);
    }
    assertNothingStored(key);
    assertThat(once.call(key, FP, Codecs.utf8(), this::book).replayed()).isFalse();
  }

  @Test
  void callInTransactionRefusesAConnectionInAutocommitMode() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("joined-autocommit");
    AtomicInteger runs = new AtomicInteger();
    try (Connection c = dataSource().getConnection()) {
      assertThat(c.getAutoCommit()).isTrue();

      assertThatThrownBy(() -> once.callInTransaction(c, key, FP, Codecs.utf8(), tx -> {
        runs.incrementAndGet();
        return book(tx);
      })).isInstanceOf(IllegalStateException.class).hasMessageContaining("autocommit");
    }
    assertThat(runs).hasValue(0);
    assertNothingStored(key);
  }

  @Test
  void aRetryableFailureInTheCallersTransactionUndoesOnlyTheCall() throws Exception {
    TransactionalOnce once = once()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class)).build();
    IdempotencyKey key = key("joined-retryable");
    IOException boom = new IOException("retry me");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      insertLedger(c, key + "/caller", 0, 1);

      assertThat(catchThrowable(() -> once.callInTransaction(c, key, FP, Codecs.utf8(), tx -> {
        book(tx);
        throw boom;
      }))).isSameAs(boom);

      insertLedger(c, key + "/caller-after", 0, 1); // the caller's transaction goes on
      c.commit();
      c.setAutoCommit(true);
    }
    assertThat(store().find(key)).isEmpty();
    assertThat(ledgerRows(key + "/caller")).isEqualTo(2);
    assertThat(ledgerRows(key)).isEqualTo(2);
    assertThat(once.call(key, FP, Codecs.utf8(), this::book).replayed()).isFalse();
  }

  @Test
  void aTerminalFailureInTheCallersTransactionIsStoredWhenTheCallerCommits() throws Exception {
    TransactionalOnce once = once()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class)).build();
    IdempotencyKey key = key("joined-terminal");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      insertLedger(c, key + "/caller", 0, 1);

      assertThatThrownBy(() -> once.callInTransaction(c, key, FP, Codecs.utf8(), tx -> {
        book(tx);
        throw new InsufficientFunds("no");
      })).isInstanceOf(InsufficientFunds.class);

      c.commit();
      c.setAutoCommit(true);
    }
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.COMPLETED);
    assertThat(r.outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(ledgerRows(key)).isEqualTo(1); // only the caller's row
    assertThatThrownBy(() -> once.call(key, FP, Codecs.utf8(), this::book))
        .isInstanceOf(ReplayedFailureException.class);
  }

  @Test
  void aReplayInTheCallersTransactionLeavesItUsable() throws Exception {
    TransactionalOnce once = once().build();
    IdempotencyKey key = key("joined-replay");
    Result<String> first = once.call(key, FP, Codecs.utf8(), this::book);
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);

      Result<String> again = once.callInTransaction(c, key, FP, Codecs.utf8(), this::book);
      assertThatThrownBy(() -> once.callInTransaction(c, key, Fingerprint.of("x"), Codecs.utf8(),
          this::book)).isInstanceOf(KeyReusedException.class);

      assertThat(again).isEqualTo(new Result<>(first.value(), true, first.token()));
      insertLedger(c, key + "/caller", 0, 1);
      c.commit();
      c.setAutoCommit(true);
    }
    assertThat(ledgerRows(key)).isEqualTo(2);
  }

  @Test
  void callsNestInOneTransaction() throws Exception {
    TransactionalOnce once = once()
        .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class)).build();
    IdempotencyKey outer = key("outer");
    IdempotencyKey inner = key("inner");
    IdempotencyKey terminal = key("inner-terminal");
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      once.callInTransaction(c, outer, FP, Codecs.utf8(), tx -> {
        book(tx);
        assertThatThrownBy(() -> once.callInTransaction(tx.connection(), inner, FP,
            Codecs.utf8(), inside -> {
              book(inside);
              throw new IOException("inner fails, retryable");
            })).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> once.callInTransaction(tx.connection(), terminal, FP,
            Codecs.utf8(), inside -> {
              book(inside);
              throw new InsufficientFunds("inner fails, terminal");
            })).isInstanceOf(InsufficientFunds.class);
        insertLedger(tx.connection(), outer + "/after-inner", 0, 1);
        return "outer done";
      });
      c.commit();
      c.setAutoCommit(true);
    }
    assertThat(record(outer).status()).isEqualTo(Status.COMPLETED);
    assertThat(ledgerRows(outer)).isEqualTo(2);
    assertNothingStored(inner);
    assertThat(record(terminal).outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThat(ledgerRows(terminal)).isZero();
  }

  // ----------------------------------------------------------------------------------------------
  // what the logic sees, connections, listener, builder

  @Test
  void theTransactionsDownstreamKeyIsLeaseModesAttemptKey() throws Exception {
    IdempotencyKey key = IdempotencyKey.of("payments.charge", "tenant-7", "order 42/a?");
    AtomicReference<String> attemptKey = new AtomicReference<>();
    try (InMemoryStore memory = new InMemoryStore()) {
      Once.builder(memory).build().execute(key, FP, Codecs.utf8(), attempt -> {
        attemptKey.set(attempt.key());
        return "x";
      });
    }
    AtomicReference<Transaction> seen = new AtomicReference<>();
    IdempotencyKey unique = IdempotencyKey.of(key.scope() + "." + UUID.randomUUID()
        .toString().substring(0, 8), key.tenant(), key.key());
    Result<String> r = once().build().call(unique, FP, Codecs.utf8(), tx -> {
      seen.set(tx);
      assertThat(tx.connection().getAutoCommit() && dialect() != JdbcDialect.SQLITE).isFalse();
      return "y";
    });
    String leaseModeKeyOfUnique;
    try (InMemoryStore memory = new InMemoryStore()) {
      AtomicReference<String> k = new AtomicReference<>();
      Once.builder(memory).build().execute(unique, FP, Codecs.utf8(), attempt -> {
        k.set(attempt.key());
        return "x";
      });
      leaseModeKeyOfUnique = k.get();
    }

    assertThat(seen.get().key()).isEqualTo(leaseModeKeyOfUnique).startsWith("once-").hasSize(48);
    assertThat(seen.get().idempotencyKey()).isEqualTo(unique);
    assertThat(seen.get().token()).isEqualTo(r.token());
    assertThat(attemptKey.get()).isEqualTo("once-"
        + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(
            java.security.MessageDigest.getInstance("SHA-256").digest(
                "payments.charge\0tenant-7\0order 42/a?".getBytes(
                    java.nio.charset.StandardCharsets.UTF_8))));
  }

  @Test
  void connectionsGoBackToThePoolAsTheyCame() throws Exception {
    HikariConfig config = Databases.config("once-tx-one-" + dialect());
    config.setDataSource(dataSource());
    config.setMaximumPoolSize(1);
    config.setMinimumIdle(1);
    try (HikariDataSource single = new HikariDataSource(config)) {
      JdbcStore onOne = storeOn(single).build();
      TransactionalOnce once = TransactionalOnce.builder(onOne)
          .failurePolicy(FailurePolicy.retryAll().terminalOn(InsufficientFunds.class)).build();
      IdempotencyKey key = key("pool");
      once.call(key, FP, Codecs.utf8(), this::book);
      once.call(key, FP, Codecs.utf8(), this::book);
      assertThatThrownBy(() -> once.call(key("pool-retryable"), FP, Codecs.utf8(), tx -> {
        throw new IOException("x");
      })).isInstanceOf(IOException.class);
      assertThatThrownBy(() -> once.call(key("pool-terminal"), FP, Codecs.utf8(), tx -> {
        throw new InsufficientFunds("x");
      })).isInstanceOf(InsufficientFunds.class);

      try (Connection c = single.getConnection()) {
        assertThat(c.getAutoCommit()).isTrue();
        insertLedger(c, key + "/autocommitted", 0, 1); // committed at once, visible elsewhere
      }
      assertThat(ledgerRows(key + "/autocommitted")).isEqualTo(1);
    }
  }

  /** What the happy path sends through JDBC: few round trips is the point of this mode. */
  abstract List<String> happyPath();

  /** What a replay sends. */
  abstract List<String> replayPath();

  @Test
  void theHappyPathIsAClaimTheLogicACompletionAndOneCommit() throws Exception {
    CountingDataSource counting = new CountingDataSource(dataSource());
    JdbcStore counted = storeOn(counting.dataSource).build();
    TransactionalOnce once = TransactionalOnce.builder(counted).build();
    IdempotencyKey key = key("round-trips");

    once.call(key, FP, Codecs.utf8(), tx -> "no SQL of its own");
    assertThat(counting.calls).as("happy path").isEqualTo(happyPath());
    counting.calls.clear();
    once.call(key, FP, Codecs.utf8(), tx -> "no SQL of its own");
    assertThat(counting.calls).as("replay").isEqualTo(replayPath());
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void theListenerSeesEachStep() throws Exception {
    List<String> events = new CopyOnWriteArrayList<>();
    OnceListener listener = new OnceListener() {
      @Override
      public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
        events.add("acquired");
      }

      @Override
      public void onReplayed(IdempotencyKey key) {
        events.add("replayed");
      }

      @Override
      public void onMismatch(IdempotencyKey key) {
        events.add("mismatch");
      }

      @Override
      public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
        events.add("completed");
      }

      @Override
      public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
        events.add(terminal ? "failed-terminal" : "failed");
      }

      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        events.add(operation + (succeeded ? "" : "!"));
      }
    };
    TransactionalOnce once = once().listener(listener).build();
    IdempotencyKey key = key("listened");

    once.call(key, FP, Codecs.utf8(), this::book);
    once.call(key, FP, Codecs.utf8(), this::book);
    catchThrowable(() -> once.call(key, Fingerprint.of("other"), Codecs.utf8(), this::book));
    catchThrowable(() -> once.call(key("listened-failing"), FP, Codecs.utf8(), tx -> {
      throw new IOException("x");
    }));

    assertThat(events).containsExactly("claim", "acquired", "complete", "completed",
        "claim", "replayed", "claim", "mismatch", "claim", "acquired", "failed");
  }

  @Test
  void eachCallIsToldAsAPairCarryingTheCallTimedOnTheTicker() throws Exception {
    List<String> events = new CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
    List<Long> ids = new CopyOnWriteArrayList<>();
    OnceListener listener = new OnceListener() {
      String id(Call call) {
        if (!ids.contains(call.id())) {
          ids.add(call.id());
        }
        return "c" + (ids.indexOf(call.id()) + 1);
      }

      @Override
      public void onCallStarted(Call call) {
        events.add(id(call) + " started token=" + call.token());
      }

      @Override
      public void onStoreCall(Call call, String operation, Duration elapsed, boolean ok) {
        events.add(id(call) + " " + operation + (ok ? "" : "!"));
      }

      @Override
      public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
        events.add(id(call) + " acquired attempt=" + call.attempt());
      }

      @Override
      public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable f) {
        events.add(id(call) + " " + outcome + " " + elapsed.toMillis() + "ms");
      }
    };
    TransactionalOnce once = once().listener(listener).ticker(nanos::get).build();
    IdempotencyKey key = key("call-scoped");

    once.call(key, FP, Codecs.utf8(), tx -> {
      nanos.addAndGet(Duration.ofMillis(40).toNanos());
      return book(tx);
    });
    once.call(key, FP, Codecs.utf8(), this::book);
    catchThrowable(() -> once.call(key("call-scoped-failing"), FP, Codecs.utf8(), tx -> {
      throw new IOException("x");
    }));

    assertThat(events).containsExactly(
        "c1 started token=-1", "c1 claim", "c1 acquired attempt=1", "c1 complete",
        "c1 COMPLETED 40ms",
        "c2 started token=-1", "c2 claim", "c2 REPLAYED 0ms",
        "c3 started token=-1", "c3 claim", "c3 acquired attempt=1", "c3 FAILED 0ms");
  }

  @Test
  void theBuilderRefusesNonsense() {
    TransactionalOnce.Builder builder = once();
    assertThatThrownBy(() -> builder.lockWait(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.retention(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.maxPayloadBytes(0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.clock(null)).isInstanceOf(NullPointerException.class);
    TransactionalOnce once = builder.lockWait(Duration.ZERO).build();
    assertThat(once.lockWait()).isZero();
    assertThat(once.store()).isSameAs(store());
    assertThat(TransactionalOnce.builder(store()).build().lockWait())
        .isEqualTo(Duration.ofSeconds(5));
    assertThatThrownBy(() -> once.call(null, FP, Codecs.utf8(), this::book))
        .isInstanceOf(NullPointerException.class);
  }
}
