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
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
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
 * {@code claimAll(requests, lockWait)} on a database whose batch claim can bound its wait for a
 * held row: a batch that meets a row another transaction holds gives up after the lock wait (in
 * the database's granularity), rolled back, at once and on one connection (not retried), holding
 * nothing; a batch that meets none claims as {@code claimAll} does, and leaves the connection's
 * own lock wait as it found it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class BatchClaimLockWaitContract {

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

  /** The lock wait as each of the pool's connections has it (both taken at once). */
  String lockWaitOfEveryPooledConnection() throws Exception {
    try (Connection one = pool().getConnection(); Connection two = pool().getConnection()) {
      String first = sessionLockWait(one);
      assertThat(sessionLockWait(two)).isEqualTo(first);
      return first;
    }
  }
}
