package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import dev.once.testkit.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * On PostgreSQL, Once with {@code coalesceStoreCalls(8)} coalesces concurrent calls only when more
 * callers want the store than it lets call alone: up to eight callers each make their own store
 * calls, as without coalescing; beyond that, callers that queue share batches.
 * Real threads against the real server, with its own table and pool.
 */
@Tag("postgres")
class PostgresCoalescingTest {

  private static final Fingerprint FP = Fingerprint.of("coalescing");
  private static HikariDataSource pool;
  /** The same database through a pool of eight, for Once as built by default. */
  private static HikariDataSource poolOfEight;
  private static String table;

  private final String scope = "coalesce." + UUID.randomUUID().toString().substring(0, 8);
  private final ExecutorService threads = Executors.newCachedThreadPool();
  /** Every store call Once made, by operation: "claim", "claimAll", "complete", … */
  private final Map<String, AtomicInteger> storeCalls = new ConcurrentHashMap<>();
  private final OnceListener counting = new OnceListener() {
    @Override
    public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
      storeCalls.computeIfAbsent(operation, o -> new AtomicInteger()).incrementAndGet();
    }

    @Override
    public void onCoalescingDetour(CoalescingDetour detour, String operation, int calls) {
      storeCalls.computeIfAbsent(detour + " " + operation, o -> new AtomicInteger())
          .incrementAndGet();
    }
  };

  @BeforeAll
  static void start() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    config.setMaximumPoolSize(24);
    config.setPoolName("once-coalescing");
    pool = new HikariDataSource(config);
    HikariConfig eight = new HikariConfig();
    eight.setJdbcUrl(TestPostgres.jdbcUrl());
    eight.setMaximumPoolSize(8);
    eight.setPoolName("once-coalescing-8");
    poolOfEight = new HikariDataSource(eight);
    table = Databases.uniqueTable("once_coalesce");
    JdbcStore.builder(pool).dialect(JdbcDialect.POSTGRESQL).table(table).build().createSchema();
  }

  @AfterAll
  static void stop() throws Exception {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    }
    pool.close();
    poolOfEight.close();
  }

  private static JdbcStore.Builder store() {
    return JdbcStore.builder(pool).table(table);
  }

  private int calls(String operation) {
    AtomicInteger n = storeCalls.get(operation);
    return n == null ? 0 : n.get();
  }

  /** Left to the store, Once coalesces beyond the pool's size here: what the store suggests. */
  @Test
  void coalescingIsLeftToTheStoreWhichSuggestsThePoolsSizeOnPostgres() {
    Once byDefault = Once.builder(store().dialect(JdbcDialect.POSTGRESQL).build()).build();
    assertThat(byDefault.config().coalescedCallsInFlight()).as("left to the store").isEqualTo(-1);
    assertThat(store().dialect(JdbcDialect.POSTGRESQL).build().defaultCoalescing())
        .as("the pool's size").isEqualTo(24);
    assertThat(JdbcStore.builder(poolOfEight).dialect(JdbcDialect.POSTGRESQL).build()
        .defaultCoalescing()).isEqualTo(8);
    JdbcStore detecting = JdbcStore.builder(poolOfEight).table(table).build();
    assertThat(detecting.defaultCoalescing()).as("not detected yet, and never connects for it")
        .isEqualTo(-1);
    assertThat(detecting.dialect()).isEqualTo(JdbcDialect.POSTGRESQL);
    assertThat(detecting.defaultCoalescing()).as("the dialect detected").isEqualTo(8);
    assertThat(coalescing().config().coalescedCallsInFlight()).isEqualTo(8);
  }

  private Once coalescing() {
    return coalescing(System::nanoTime);
  }

  private Once coalescing(java.util.function.LongSupplier ticker) {
    return Once.builder(store().dialect(JdbcDialect.POSTGRESQL).build()).coalesceStoreCalls(8)
        .listener(counting).ticker(ticker).build();
  }

  /**
   * As a user gets it: neither dialect nor coalescing given, over a pool of eight (so coalesced
   * beyond eight callers). Its first call detects the database; calls go alone until then. Its
   * store calls are not counted.
   */
  private Once byDefault(java.util.function.LongSupplier ticker) {
    Once once = Once.builder(JdbcStore.builder(poolOfEight).table(table).build())
        .listener(counting).ticker(ticker).build();
    once.execute(IdempotencyKey.of(scope, "first"), FP, Codecs.utf8(), attempt -> "detects");
    storeCalls.clear();
    return once;
  }

  /** At most eight callers at once: never a batch, as if coalescing were off. */
  @Test
  void eightCallersEachCallTheStoreAlone() throws Exception {
    Once once = coalescing();
    AtomicInteger runs = new AtomicInteger();
    List<Future<?>> callers = new ArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    for (int t = 0; t < 8; t++) {
      int thread = t;
      callers.add(threads.submit(() -> {
        go.await();
        for (int i = 0; i < 100; i++) {
          once.call(IdempotencyKey.of(scope, thread + "-" + i), FP, Codecs.utf8(), attempt -> {
            runs.incrementAndGet();
            return "ok";
          });
        }
        return null;
      }));
    }
    go.countDown();
    for (Future<?> f : callers) {
      f.get(60, TimeUnit.SECONDS);
    }

    assertThat(runs).hasValue(800);
    assertThat(calls("claim")).isEqualTo(800);
    assertThat(calls("complete")).isEqualTo(800);
    assertThat(calls("claimAll")).isZero();
    assertThat(calls("completeAll")).isZero();
  }

  /**
   * Twelve callers while every insert waits for a table lock: eight call alone and wait at the
   * server; the other four queue in Once (not at the server). Once the lock is gone, they are
   * served by the calls that end (in a batch, if the demand is still above eight) or, as the
   * demand falls to eight, admitted to call alone. Every work runs once and every outcome is
   * stored. The ticker stands still: with every call in flight stuck on the lock, queued callers
   * would otherwise escape after 50 ms with one call beyond eight
   * ({@link #eightDuplicatesWaitingForAHeldRowDoNotHoldUpCallersOnOtherKeys}).
   */
  @ParameterizedTest(name = "coalescing {0}")
  @ValueSource(strings = {"coalesceStoreCalls(8)", "left to the store"})
  void callersBeyondEightQueueInOnceUntilACallEndsOrTheDemandFalls(String configured)
      throws Exception {
    java.util.function.LongSupplier stillTicker = () -> 0L;
    Once once = configured.equals("left to the store") ? byDefault(stillTicker)
        : coalescing(stillTicker);
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    List<Thread> callerThreads = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<Future<String>> answers = new ArrayList<>();
    try (Connection locker = pool.getConnection()) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("LOCK TABLE " + table + " IN EXCLUSIVE MODE"); // reads pass, writes wait
      }
      for (int i = 0; i < 12; i++) {
        String key = "queued-" + i;
        answers.add(threads.submit(() -> {
          callerThreads.add(Thread.currentThread());
          return once.call(IdempotencyKey.of(scope, key), FP, Codecs.utf8(), attempt -> {
            runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            return key;
          }).value();
        }));
      }
      awaitUntil(() -> sessionsWaitingForTheLock() == 8 && parked(callerThreads) == 4,
          "8 claims waiting at the server and 4 queued in Once");
      assertThat(calls("claim") + calls("claimAll")).as("no claim has ended").isZero();
      locker.commit();
    }

    for (int i = 0; i < 12; i++) {
      assertThat(answers.get(i).get(60, TimeUnit.SECONDS)).isEqualTo("queued-" + i);
    }
    assertThat(runs).hasSize(12).allSatisfy((key, n) -> assertThat(n).hasValue(1));
    // How the four split is a race: a leader woken by a call that ends takes everything queued
    // when it wakes; one admitted as the demand falls to eight may find only itself. So any mix
    // of batches and single claims, each of the four in exactly one of them.
    assertThat(calls("claimAll")).isBetween(0, 2);
    assertThat(calls("claim")).isBetween(8, 12);
    assertThat(calls("claim") + 2 * calls("claimAll")).isLessThanOrEqualTo(12);
    JdbcStore store = store().dialect(JdbcDialect.POSTGRESQL).build();
    for (int i = 0; i < 12; i++) {
      IdempotencyRecord record = store.find(IdempotencyKey.of(scope, "queued-" + i)).orElseThrow();
      assertThat(record.status()).isEqualTo(Status.COMPLETED);
    }
  }

  /**
   * Eight lease-mode duplicates of a key whose row a long transaction holds each claim alone and
   * wait at the server: with {@code coalesceStoreCalls(8)} and a pool of 24 (as Once is built by
   * default over a pool that does not say its size), every call in flight is stuck and none is
   * left to escape with. Callers on other keys used to queue in Once until the transaction ended
   * (found by review: the pool had connections free); now, once no call has ended for the escape
   * time, the oldest makes one call beyond eight, and they are served while the row is still
   * held.
   */
  @Test
  void eightDuplicatesWaitingForAHeldRowDoNotHoldUpCallersOnOtherKeys() throws Exception {
    // before the fix, all waited for the transaction
    callersOnOtherKeysAreServedWhileDuplicatesWaitForAHeldRow(coalescing(), 8, 5, 20);
  }

  /**
   * A long transaction holds a key's row (TransactionalOnce, its work not yet returned), and two
   * lease-mode duplicates of that key wait at the server for it: with {@code coalesceStoreCalls(4)}
   * those are the two calls in flight that queued callers wait for. A flood of callers on other
   * keys used to queue behind them until the transaction ended; now the oldest escapes after the
   * escape time with one more call, and every caller of the flood is served while the row is
   * still held. The duplicates then replay the transaction's value.
   */
  @Test
  void callersQueuedBehindClaimsStuckOnALockedRowAreServedWhileTheRowIsHeld() throws Exception {
    Once once = Once.builder(store().dialect(JdbcDialect.POSTGRESQL).build())
        .coalesceStoreCalls(4).listener(counting).build();
    // without the escape, all wait for the transaction
    callersOnOtherKeysAreServedWhileDuplicatesWaitForAHeldRow(once, 2, 25, 60);
  }

  /**
   * A TransactionalOnce call holds a key's row while {@code duplicates} lease-mode duplicates of
   * it wait at the server; eight threads then make {@code callsEach} calls each on other keys.
   * Each of those runs once within {@code seconds}, with escapes told, while the row is still
   * held; the duplicates then replay the owner's value and run nothing.
   */
  private void callersOnOtherKeysAreServedWhileDuplicatesWaitForAHeldRow(Once once,
      int duplicates, int callsEach, int seconds) throws Exception {
    IdempotencyKey held = IdempotencyKey.of(scope, "held");
    CountDownLatch inWork = new CountDownLatch(1);
    CountDownLatch endWork = new CountDownLatch(1);
    TransactionalOnce transactional =
        TransactionalOnce.builder(store().dialect(JdbcDialect.POSTGRESQL).build()).build();
    Future<String> owner = threads.submit(() -> transactional.execute(held, FP, Codecs.utf8(),
        tx -> {
          inWork.countDown();
          endWork.await();
          return "the owner's";
        }));
    List<Future<String>> waiting = new ArrayList<>();
    AtomicInteger runs = new AtomicInteger();
    int others = 8 * callsEach;
    try {
      assertThat(inWork.await(30, TimeUnit.SECONDS)).isTrue();
      for (int i = 0; i < duplicates; i++) {
        waiting.add(threads.submit(() -> once.call(held, FP, Codecs.utf8(), attempt -> {
          runs.incrementAndGet();
          return "a duplicate's";
        }).value()));
      }
      awaitUntil(() -> sessionsWaitingForTheLock() == duplicates,
          duplicates + " claims waiting for the held row");

      List<Future<?>> flood = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int thread = t;
        flood.add(threads.submit(() -> {
          for (int i = 0; i < callsEach; i++) {
            once.call(IdempotencyKey.of(scope, "other-" + thread + "-" + i), FP, Codecs.utf8(),
                attempt -> {
                  runs.incrementAndGet();
                  return "ok";
                });
          }
          return null;
        }));
      }
      for (Future<?> f : flood) {
        f.get(seconds, TimeUnit.SECONDS);
      }
      assertThat(runs).as("every other key ran, the duplicates did not").hasValue(others);
      assertThat(calls("ESCAPE claim")).as("escapes, told to the listener").isPositive();
      assertThat(owner).isNotDone();
      assertThat(sessionsWaitingForTheLock()).isEqualTo(duplicates);
    } finally {
      endWork.countDown();
    }
    assertThat(owner.get(30, TimeUnit.SECONDS)).isEqualTo("the owner's");
    for (Future<String> d : waiting) {
      assertThat(d.get(30, TimeUnit.SECONDS)).isEqualTo("the owner's");
    }
    assertThat(runs).hasValue(others);
  }


  /**
   * A batch claim that holds a key whose row a long transaction holds (TransactionalOnce, its work
   * not yet returned) used to hold all of its callers until that transaction ended. Now it gives
   * up after the lock wait (50 ms), rolled back, and its callers make their claims alone: the
   * others are served while the row is held, and only that key's caller waits, then replays.
   * With {@code coalesceStoreCalls(2)}, two duplicates waiting at the server for two other held
   * rows are the calls in flight, so x, the held key's duplicate and y queue in Once and share
   * the batch that the first call to end hands its slot to.
   */
  @Test
  void aBatchClaimWithAKeyWhoseRowIsHeldGivesUpAndOnlyThatKeysCallerWaits() throws Exception {
    Once once = Once.builder(store().dialect(JdbcDialect.POSTGRESQL).build())
        .coalesceStoreCalls(2).listener(counting).build();
    TransactionalOnce transactional =
        TransactionalOnce.builder(store().dialect(JdbcDialect.POSTGRESQL).build()).build();
    Map<String, CountDownLatch> ends = new ConcurrentHashMap<>();
    Map<String, Future<String>> owners = new ConcurrentHashMap<>();
    for (String k : List.of("stuck-1", "stuck-2", "held")) {
      CountDownLatch inWork = new CountDownLatch(1);
      ends.put(k, new CountDownLatch(1));
      owners.put(k, threads.submit(() -> transactional.execute(IdempotencyKey.of(scope, k), FP,
          Codecs.utf8(), tx -> {
            inWork.countDown();
            ends.get(k).await();
            return "the owner's " + k;
          })));
      assertThat(inWork.await(30, TimeUnit.SECONDS)).isTrue();
    }
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    List<Thread> queuedThreads = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.function.BiFunction<String, Boolean, Future<String>> caller = (k, queues) ->
        threads.submit(() -> {
          if (queues) {
            queuedThreads.add(Thread.currentThread());
          }
          return once.call(IdempotencyKey.of(scope, k), FP, Codecs.utf8(), attempt -> {
            runs.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
            return "ran " + k;
          }).value();
        });
    Map<String, Future<String>> answers = new ConcurrentHashMap<>();
    try {
      answers.put("stuck-1", caller.apply("stuck-1", false));
      answers.put("stuck-2", caller.apply("stuck-2", false));
      awaitUntil(() -> sessionsWaitingForTheLock() == 2, "two claims waiting for held rows");
      for (String k : List.of("x", "held", "y")) {
        answers.put(k, caller.apply(k, true));
        int n = answers.size() - 2;
        awaitUntil(() -> queuedThreads.size() == n && parked(queuedThreads) == n,
            n + " queued in Once");
      }

      ends.get("stuck-1").countDown(); // its duplicate replays; its slot goes to x's batch

      assertThat(answers.get("x").get(30, TimeUnit.SECONDS)).isEqualTo("ran x");
      assertThat(answers.get("y").get(30, TimeUnit.SECONDS)).isEqualTo("ran y");
      assertThat(answers.get("held")).as("waits for the row, alone").isNotDone();
      assertThat(owners.get("held")).isNotDone();
      assertThat(calls("claimAll")).as("the batch was tried, and gave up").isEqualTo(1);
      assertThat(calls("BATCH_FAILED claim")).as("told to the listener").isEqualTo(1);
    } finally {
      ends.values().forEach(CountDownLatch::countDown);
    }
    for (String k : List.of("stuck-1", "stuck-2", "held")) {
      assertThat(owners.get(k).get(30, TimeUnit.SECONDS)).isEqualTo("the owner's " + k);
      assertThat(answers.get(k).get(30, TimeUnit.SECONDS)).isEqualTo("the owner's " + k);
    }
    assertThat(runs).containsOnlyKeys("x", "y")
        .allSatisfy((k, n) -> assertThat(n).hasValue(1));
  }

  /**
   * As above, for completions. A batch completion that holds a key whose row another transaction
   * holds (a TransactionalOnce duplicate of the key in progress, inside its caller's longer
   * transaction) held all of its callers until that transaction ended. Now it gives up after the
   * lock wait, storing nothing, and each caller completes alone: only the held key's caller
   * waits. With {@code coalesceStoreCalls(2)}, the completions of stuck-1 and stuck-2, waiting
   * at the server for their held rows, are the calls in flight, so x's, held's and y's queue in
   * Once and share the batch that stuck-1's completion hands its slot to once its row is free.
   */
  @Test
  void aBatchCompletionWithAKeyWhoseRowIsHeldGivesUpAndOnlyThatKeysCallerWaits()
      throws Exception {
    Once once = Once.builder(store().dialect(JdbcDialect.POSTGRESQL).build())
        .coalesceStoreCalls(2).listener(counting).build();
    List<String> keys = List.of("stuck-1", "stuck-2", "x", "held", "y");
    Map<String, CountDownLatch> working = new ConcurrentHashMap<>();
    Map<String, CountDownLatch> finish = new ConcurrentHashMap<>();
    List<String> workDone = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<Thread> completing = new java.util.concurrent.CopyOnWriteArrayList<>();
    Map<String, Future<String>> answers = new ConcurrentHashMap<>();
    for (String k : keys) {
      working.put(k, new CountDownLatch(1));
      finish.put(k, new CountDownLatch(1));
      answers.put(k, threads.submit(() -> once.call(IdempotencyKey.of(scope, k), FP,
          Codecs.utf8(), attempt -> {
            completing.add(Thread.currentThread());
            working.get(k).countDown();
            finish.get(k).await();
            workDone.add(k);
            return "ran " + k;
          }).value()));
      assertThat(working.get(k).await(30, TimeUnit.SECONDS)).as("%s claimed", k).isTrue();
    }
    Map<String, Connection> holders = new ConcurrentHashMap<>();
    try {
      for (String k : List.of("stuck-1", "stuck-2", "held")) {
        holders.put(k, holdRow(IdempotencyKey.of(scope, k)));
      }
      finish.get("stuck-1").countDown();
      finish.get("stuck-2").countDown();
      awaitUntil(() -> sessionsWaitingForTheLock() == 2, "two completions waiting for rows");
      List.of("x", "held", "y").forEach(k -> finish.get(k).countDown());
      awaitUntil(() -> workDone.size() == 5 && parked(completing.subList(2, 5)) == 3,
          "three completions queued in Once");

      rollBack(holders.remove("stuck-1")); // its completion ends; its slot goes to x's batch

      assertThat(answers.get("x").get(30, TimeUnit.SECONDS)).isEqualTo("ran x");
      assertThat(answers.get("y").get(30, TimeUnit.SECONDS)).isEqualTo("ran y");
      assertThat(answers.get("held")).as("waits for the row, alone").isNotDone();
      assertThat(calls("completeAll")).as("the batch was tried, and gave up").isEqualTo(1);
      assertThat(calls("BATCH_FAILED complete")).as("told to the listener").isEqualTo(1);
    } finally {
      holders.values().forEach(PostgresCoalescingTest::rollBack);
      finish.values().forEach(CountDownLatch::countDown);
    }
    JdbcStore store = store().dialect(JdbcDialect.POSTGRESQL).build();
    for (String k : keys) {
      assertThat(answers.get(k).get(30, TimeUnit.SECONDS)).isEqualTo("ran " + k);
      assertThat(store.find(IdempotencyKey.of(scope, k))).get()
          .extracting(IdempotencyRecord::status).isEqualTo(Status.COMPLETED);
    }
  }

  /** A connection whose open transaction locks {@code key}'s row. */
  private static Connection holdRow(IdempotencyKey key) throws java.sql.SQLException {
    Connection c = pool.getConnection();
    c.setAutoCommit(false);
    try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT idem_key FROM " + table
        + " WHERE scope = ? AND idem_key = ? FOR UPDATE")) {
      ps.setString(1, key.scope());
      ps.setString(2, key.key());
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("the row of %s", key).isTrue();
      }
    }
    return c;
  }

  private static void rollBack(Connection holder) {
    try (holder) {
      holder.rollback();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Sessions of this server waiting for a lock on the test's table. */
  private static int sessionsWaitingForTheLock() {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity"
            + " WHERE wait_event_type = 'Lock' AND query LIKE '%" + table + "%'")) {
      rs.next();
      return rs.getInt(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Caller threads parked (queued in a coalescer, which wakes now and then to see whether the
   * calls in flight are late; a thread in a JDBC read is RUNNABLE, and the pool has a connection
   * for each caller).
   */
  private static int parked(List<Thread> callers) {
    int n = 0;
    for (Thread t : callers) {
      Thread.State state = t.getState();
      if (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
        n++;
      }
    }
    return n;
  }

  private static void awaitUntil(java.util.function.BooleanSupplier condition, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as(what).isLessThan(deadline);
      Thread.sleep(10); // polling a condition, not letting time pass
    }
  }

}
