package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@code claimAll(requests, lockWait)} and {@code completeAll(completions, now, retention,
 * lockWait)} on a database whose batches can bound their wait for a held row: a batch that meets
 * a row another transaction holds gives up after the lock wait (in the database's granularity),
 * rolled back, at once and on one connection (not retried), holding or storing nothing; a batch
 * that meets none claims or stores as the batch without a bound does, and leaves the
 * connection's own lock wait as it found it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class BatchLockWaitContract {

  static final Fingerprint FP = Fingerprint.of("lock-wait");
  static final Duration LOCK_WAIT = Duration.ofMillis(100);

  private HikariDataSource pool;
  private String table;

  /** Where the database is: URL and credentials (the pool's size and name are set here). */
  abstract HikariConfig database();

  abstract JdbcDialect dialect();

  @BeforeAll
  void start() {
    HikariConfig config = database();
    config.setMaximumPoolSize(2); // the holder's and the batch's: the batch reuses its own
    config.setPoolName("once-lock-wait-" + dialect());
    pool = new HikariDataSource(config);
    table = Databases.uniqueTable("once_lock_wait");
    JdbcStore.builder(pool).dialect(dialect()).table(table).build().createSchema();
  }

  @AfterAll
  void stop() throws Exception {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    }
    pool.close();
  }

  /** Threads for calls that may wait, stopped after each test. */
  ExecutorService threads() {
    return threads;
  }

  /** The table the tests share. */
  String table() {
    return table;
  }

  /** The pool of two connections the tests share (the holder's and the batch's). */
  HikariDataSource pool() {
    return pool;
  }

  /** How long a batch given {@link #LOCK_WAIT} waits, in the message: the database's bound. */
  abstract String boundInMessage();

  /** The session's own lock wait setting on {@code c}, as the database shows it. */
  abstract String sessionLockWait(Connection c) throws Exception;

  /** What {@link #sessionLockWait} shows on a connection nobody changed. */
  abstract String defaultLockWait() throws Exception;

  private final String scope = "lockwait." + UUID.randomUUID().toString().substring(0, 8);
  private ExecutorService threads;
  private final AtomicInteger connectionsTaken = new AtomicInteger();

  @BeforeEach
  void startThreads() {
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  /** The store over the pool, counting the connections it takes (one per attempt). */
  JdbcStore store() {
    DataSource counting = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {DataSource.class}, (p, m, a) -> {
          if (m.getName().equals("getConnection")) {
            connectionsTaken.incrementAndGet();
          }
          try {
            return m.invoke(pool(), a);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    return JdbcStore.builder(counting).dialect(dialect()).table(table).build();
  }

  IdempotencyKey key(String k) {
    return IdempotencyKey.of(scope, k);
  }

  static ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, Instant.now(), Duration.ofSeconds(30), Duration.ofHours(1));
  }

  @Test
  void aBatchThatMeetsAHeldRowGivesUpAfterTheLockWaitAtOnceAndHoldsNothing() throws Exception {
    JdbcStore store = store();
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch end = new CountDownLatch(1);
    Future<String> holder = threads.submit(() -> TransactionalOnce.builder(store).build()
        .execute(key("held"), FP, Codecs.utf8(), tx -> {
          inWork.countDown();
          end.await();
          return "held";
        }));
    try {
      assertThat(inWork.await(30, TimeUnit.SECONDS)).isTrue();
      int before = connectionsTaken.get();

      Future<List<Claim>> batch = threads.submit(() -> store.claimAll(
          List.of(request(key("a")), request(key("held")), request(key("b"))), LOCK_WAIT));

      assertThat(batch).as("gives up, not waits for the holder")
          .failsWithin(10, TimeUnit.SECONDS).withThrowableThat().havingCause()
          .isInstanceOf(StoreUnavailableException.class)
          .withMessageContaining("gave up after waiting " + boundInMessage()
              + " for a row another transaction holds")
          .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
              .isFalse());

      assertThat(connectionsTaken.get() - before).as("one attempt, not retried").isEqualTo(1);
      assertThat(store.find(key("a"))).as("rolled back").isEmpty();
      assertThat(store.find(key("b"))).isEmpty();
      assertThat(holder).isNotDone();
    } finally {
      end.countDown();
    }
    assertThat(holder.get(30, TimeUnit.SECONDS)).isEqualTo("held");
    assertThat(store.claimAll(List.of(request(key("a")), request(key("b"))), LOCK_WAIT))
        .allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
  }

  /**
   * A batch of one (what a near cache leaves of a batch whose other keys it answered) used to go
   * to the single claim, which waits for a held row without bound (found by review).
   */
  @Test
  void aBatchOfOneThatMeetsAHeldRowGivesUpToo() throws Exception {
    JdbcStore store = store();
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch end = new CountDownLatch(1);
    Future<String> holder = threads.submit(() -> TransactionalOnce.builder(store).build()
        .execute(key("held-alone"), FP, Codecs.utf8(), tx -> {
          inWork.countDown();
          end.await();
          return "held";
        }));
    try {
      assertThat(inWork.await(30, TimeUnit.SECONDS)).isTrue();
      Future<List<Claim>> batchOfOne = threads.submit(() ->
          store.claimAll(List.of(request(key("held-alone"))), LOCK_WAIT));

      assertThat(batchOfOne).failsWithin(10, TimeUnit.SECONDS).withThrowableThat()
          .havingCause().isInstanceOf(StoreUnavailableException.class)
          .withMessageContaining("gave up after waiting " + boundInMessage());
    } finally {
      end.countDown();
    }
    assertThat(holder.get(30, TimeUnit.SECONDS)).isEqualTo("held");
    assertThat(store.claimAll(List.of(request(key("held-alone"))), LOCK_WAIT).get(0))
        .isInstanceOf(Claim.Replay.class);
  }

  @Test
  void aBatchThatMeetsNoHeldRowClaimsAndLeavesTheSessionsLockWaitAsItWas() throws Exception {
    JdbcStore store = store();
    String before = lockWaitOfEveryPooledConnection();

    List<Claim> claims = store.claimAll(List.of(request(key("c")), request(key("d"))), LOCK_WAIT);

    assertThat(claims).hasSize(2)
        .allSatisfy(c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
    assertThat(store.claimAll(List.of(request(key("c")), request(key("d"))), LOCK_WAIT))
        .allSatisfy(c -> assertThat(c).isInstanceOf(Claim.InProgress.class));
    assertThat(lockWaitOfEveryPooledConnection()).isEqualTo(before).isEqualTo(defaultLockWait());
  }

  @Test
  void aLockWaitThatIsNotPositiveIsRefusedAndNothingIsClaimed() {
    JdbcStore store = store();
    for (Duration wait : List.of(Duration.ZERO, Duration.ofMillis(-1))) {
      assertThatThrownBy(() -> store.claimAll(List.of(request(key("e")), request(key("f"))), wait))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lockWait");
    }
    assertThatThrownBy(() -> store.claimAll(List.of(request(key("e"))), null))
        .isInstanceOf(NullPointerException.class);
    assertThat(store.find(key("e"))).isEmpty();
    assertThat(store.find(key("f"))).isEmpty();
  }

  /**
   * A batch completion that meets a row another transaction holds (a TransactionalOnce duplicate
   * of a key in progress holds it until its caller's transaction ends) waited for it, with every
   * caller of a coalesced batch; it now gives up as a batch claim does, storing nothing.
   */
  @Test
  void aBatchCompletionThatMeetsAHeldRowGivesUpAfterTheLockWaitAtOnceAndStoresNothing()
      throws Exception {
    JdbcStore store = store();
    List<Completion> completions = completionsOf(store, "done-a", "done-held", "done-b");
    try (Connection holder = pool().getConnection()) {
      holdRow(holder, key("done-held"));
      int before = connectionsTaken.get();

      Future<Set<IdempotencyKey>> batch = threads.submit(() ->
          store.completeAll(completions, Instant.now(), Duration.ofHours(1), LOCK_WAIT));

      assertThat(batch).as("gives up, not waits for the holder")
          .failsWithin(10, TimeUnit.SECONDS).withThrowableThat().havingCause()
          .isInstanceOf(StoreUnavailableException.class)
          .withMessageContaining("completeAll of 3 keys gave up after waiting "
              + boundInMessage() + " for a row another transaction holds; nothing was stored")
          .satisfies(e -> assertThat(((StoreUnavailableException) e).mayHaveBeenApplied())
              .isFalse());
      assertThat(connectionsTaken.get() - before).as("one attempt, not retried").isEqualTo(1);
      for (Completion c : completions) {
        assertThat(store.find(c.key())).as("rolled back: %s", c.key()).get()
            .extracting(IdempotencyRecord::status).isEqualTo(Status.IN_PROGRESS);
      }
      holder.rollback();
    }
    assertThat(lockWaitOfEveryPooledConnection()).as("the give-up left no lock wait behind")
        .isEqualTo(defaultLockWait());
    assertThat(store.completeAll(completions, Instant.now(), Duration.ofHours(1), LOCK_WAIT))
        .as("no lease lost").isEmpty();
    for (Completion c : completions) {
      assertThat(store.find(c.key())).get().extracting(IdempotencyRecord::status)
          .isEqualTo(Status.COMPLETED);
    }
  }

  @Test
  void aBatchCompletionThatMeetsNoHeldRowStoresAndLeavesTheSessionsLockWaitAsItWas()
      throws Exception {
    JdbcStore store = store();
    String before = lockWaitOfEveryPooledConnection();
    List<Completion> completions = completionsOf(store, "free-a", "free-b");
    Completion lost = new Completion(key("free-never-claimed"), 1, completions.get(0).outcome());
    List<Completion> batch = List.of(completions.get(0), lost, completions.get(1));

    assertThat(store.completeAll(batch, Instant.now(), Duration.ofHours(1), LOCK_WAIT))
        .containsExactly(lost.key());
    assertThat(store.completeAll(completions, Instant.now(), Duration.ofHours(1), LOCK_WAIT))
        .as("a re-sent completion is recognised").isEmpty();
    assertThat(lockWaitOfEveryPooledConnection()).isEqualTo(before).isEqualTo(defaultLockWait());
  }

  @Test
  void aBatchCompletionsLockWaitThatIsNotPositiveIsRefusedAndNothingIsStored() {
    JdbcStore store = store();
    List<Completion> completions = completionsOf(store, "refused-a", "refused-b");
    for (Duration wait : List.of(Duration.ZERO, Duration.ofMillis(-1))) {
      assertThatThrownBy(() -> store.completeAll(completions, Instant.now(), Duration.ofHours(1),
          wait)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lockWait");
    }
    assertThatThrownBy(() -> store.completeAll(completions, Instant.now(), Duration.ofHours(1),
        null)).isInstanceOf(NullPointerException.class);
    for (Completion c : completions) {
      assertThat(store.find(c.key())).get().extracting(IdempotencyRecord::status)
          .isEqualTo(Status.IN_PROGRESS);
    }
  }

  /** Claims each key and answers a completion of it under its token. */
  List<Completion> completionsOf(JdbcStore store, String... keys) {
    List<Completion> completions = new java.util.ArrayList<>();
    for (String k : keys) {
      Claim.Acquired acquired = (Claim.Acquired) store.claim(request(key(k)));
      completions.add(new Completion(key(k), acquired.token(),
          Outcome.success("text/plain", ("done " + k).getBytes(StandardCharsets.UTF_8))));
    }
    return completions;
  }

  /** Locks {@code key}'s row in a transaction of {@code holder}, until it rolls back. */
  void holdRow(Connection holder, IdempotencyKey key) throws Exception {
    holder.setAutoCommit(false);
    try (PreparedStatement ps = holder.prepareStatement("SELECT idem_key FROM " + table
        + " WHERE scope = ? AND idem_key = ? FOR UPDATE")) {
      ps.setString(1, key.scope());
      ps.setString(2, key.key());
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("the row of %s", key).isTrue();
      }
    }
  }

  /** The lock wait as each of the pool's connections has it (both taken at once). */
  String lockWaitOfEveryPooledConnection() throws Exception {
    try (Connection one = pool().getConnection(); Connection two = pool().getConnection()) {
      String first = sessionLockWait(one);
      assertThat(sessionLockWait(two)).isEqualTo(first);
      return first;
    }
  }
}
