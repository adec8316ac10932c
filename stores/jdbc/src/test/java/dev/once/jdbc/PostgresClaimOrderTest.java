package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Result;
import dev.once.jdbc.internal.ClaimOrder;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Outcome;
import dev.once.testkit.TestPostgres;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * On PostgreSQL a claim reads first while most recent claims met an existing key, and inserts
 * first otherwise ({@code ClaimOrder}): what each order sends, counted through JDBC, and how a
 * store moves between them as its stream of claims changes. (Each order's correctness is the
 * whole conformance suite, model property and transactional contract run with it fixed:
 * {@code PostgresReadFirst*}.)
 */
@Tag("postgres")
class PostgresClaimOrderTest {

  private static final Fingerprint FP = Fingerprint.of("order");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final List<String> INSERT = List.of("executeUpdate");
  private static final List<String> INSERT_THEN_READ = List.of("executeUpdate", "executeQuery");
  private static final List<String> READ = List.of("executeQuery");
  private static final List<String> READ_THEN_INSERT = List.of("executeQuery", "executeUpdate");

  private final String scope = "order." + UUID.randomUUID().toString().substring(0, 8);

  private JdbcStore.Builder store(CountingDataSource counting) {
    return JdbcStore.builder(counting.dataSource).dialect(JdbcDialect.POSTGRESQL)
        .table(Databases.Postgres.TABLE);
  }

  /** What one claim sent. */
  private static List<String> sent(CountingDataSource counting, Runnable claim) {
    counting.calls.clear();
    claim.run();
    return List.copyOf(counting.calls);
  }

  @Test
  void aLeaseModeStoreReadsFirstWhileDuplicatesDominateAndInsertsFirstOtherwise() {
    CountingDataSource counting = new CountingDataSource(Databases.Postgres.DATA_SOURCE);
    JdbcStore store = store(counting).build();
    Instant now = Instant.now();
    IdempotencyKey done = IdempotencyKey.of(scope, "done");
    Claim.Acquired acquired = (Claim.Acquired) store.claim(request(done, now));
    store.complete(done, acquired.token(), Outcome.success("text/plain", new byte[] {1}), now,
        RETENTION);

    // A new store inserts first: a new key is one statement, a duplicate two.
    assertThat(sent(counting, () -> store.claim(request(key("n0"), now)))).isEqualTo(INSERT);
    assertThat(sent(counting, () -> store.claim(request(done, now)))).isEqualTo(INSERT_THEN_READ);

    // A run of duplicates: within a few dozen claims each is one read.
    int switched = claimsUntil(READ, () -> sent(counting, () -> assertReplay(store, done, now)));
    assertThat(switched).isBetween(2, 64);
    for (int i = 0; i < 10; i++) {
      assertThat(sent(counting, () -> assertReplay(store, done, now))).isEqualTo(READ);
    }
    // Read-first, a new key reads, misses, and inserts.
    assertThat(sent(counting, () -> assertAcquired(store, key("m0"), now)))
        .isEqualTo(READ_THEN_INSERT);

    // A run of new keys: within a few dozen claims each is one insert again.
    int[] n = {1};
    int back = claimsUntil(INSERT,
        () -> sent(counting, () -> assertAcquired(store, key("m" + n[0]++), now)));
    assertThat(back).isBetween(2, 64);
    assertThat(sent(counting, () -> assertAcquired(store, key("last"), now))).isEqualTo(INSERT);
  }

  @Test
  void transactionalModeAnswersADuplicateWithOneReadOnceDuplicatesDominate() {
    CountingDataSource counting = new CountingDataSource(Databases.Postgres.DATA_SOURCE);
    TransactionalOnce once = TransactionalOnce.builder(store(counting).build()).build();
    IdempotencyKey key = key("tx");
    int[] runs = {0};
    once.call(key, FP, Codecs.utf8(), tx -> {
      runs[0]++;
      return "ran";
    });
    List<String> inTransaction =
        List.of("setAutoCommit(false)", "execute", "rollback", "setAutoCommit(true)");
    assertThat(sent(counting, () -> assertReplayed(once, key))).isEqualTo(inTransaction);

    int switched = claimsUntil(READ, () -> sent(counting, () -> assertReplayed(once, key)));
    assertThat(switched).isBetween(2, 64);
    // A new key now reads first, then claims in the transaction as before.
    assertThat(sent(counting, () -> once.call(key("tx-new"), FP, Codecs.utf8(), tx -> "new")))
        .isEqualTo(List.of("executeQuery", "setAutoCommit(false)", "execute", "execute",
            "setAutoCommit(true)"));
    assertThat(runs[0]).isEqualTo(1);
  }

  @Test
  void aConnectionNotInAutocommitIsNeverReadOutsideTheTransaction() {
    HikariConfig config = Databases.config("once-order-no-autocommit");
    config.setJdbcUrl(TestPostgres.jdbcUrl());
    config.setAutoCommit(false);
    config.setMaximumPoolSize(2);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      CountingDataSource counting = new CountingDataSource(pool);
      TransactionalOnce once = TransactionalOnce.builder(
          store(counting).claimOrder(ClaimOrder.fixed(true)).build()).build();
      IdempotencyKey key = key("no-autocommit");
      once.call(key, FP, Codecs.utf8(), tx -> "ran");

      // A read here would begin a transaction of its own: the claim runs in ours instead.
      assertThat(sent(counting, () -> assertReplayed(once, key)))
          .isEqualTo(List.of("execute", "rollback"));
    }
  }

  /**
   * A batch of duplicates (a coalesced stream of redeliveries) under read-first is one unlocking
   * read in autocommit, as a single duplicate is: no transaction, no insert, no row lock. A batch
   * with a new key among them reads, then inserts that key alone in a transaction.
   */
  @Test
  void aReadFirstBatchOfDuplicatesIsOneReadWithoutATransaction() {
    CountingDataSource counting = new CountingDataSource(Databases.Postgres.DATA_SOURCE);
    JdbcStore store = store(counting).claimOrder(ClaimOrder.fixed(true)).build();
    Instant now = Instant.now();
    IdempotencyKey done = completed(store, key("batch-done"), now);
    IdempotencyKey running = key("batch-running");
    assertAcquired(store, running, now);

    List<String> sent = sent(counting, () -> assertThat(store.claimAll(List.of(
        request(done, now), request(running, now), request(done, now))))
        .hasExactlyElementsOfTypes(Claim.Replay.class, Claim.InProgress.class,
            Claim.Replay.class));
    assertThat(sent).isEqualTo(READ);

    IdempotencyKey fresh = key("batch-new");
    assertThat(sent(counting, () -> assertThat(store.claimAll(List.of(
        request(done, now), request(fresh, now))))
        .hasExactlyElementsOfTypes(Claim.Replay.class, Claim.Acquired.class)))
        .isEqualTo(List.of("executeQuery", "setAutoCommit(false)", "executeQuery", "commit",
            "setAutoCommit(true)")); // the read, then only the new key inserted: not read again
  }

  /**
   * A batch teaches the claim order as one claim does, whatever its size: a batch of 40
   * duplicates (a coalesced burst of redeliveries) does not switch the single claims around it
   * to read-first. (It counted once per key before: one such batch switched them.)
   */
  @Test
  void aLargeBatchOfDuplicatesTeachesTheOrderAsOneClaim() {
    CountingDataSource counting = new CountingDataSource(Databases.Postgres.DATA_SOURCE);
    JdbcStore store = store(counting).build();
    Instant now = Instant.now();
    List<ClaimRequest> batch = new java.util.ArrayList<>();
    for (int i = 0; i < 40; i++) {
      batch.add(request(completed(store, key("burst-" + i), now), now));
    }
    IdempotencyKey done = batch.get(0).key();

    assertThat(store.claimAll(batch)).allMatch(c -> c instanceof Claim.Replay);
    assertThat(sent(counting, () -> assertReplay(store, done, now))).isEqualTo(INSERT_THEN_READ);
  }

  /**
   * A batch claim answers a duplicate from the committed row without locking it, in either order:
   * a row another transaction holds locked (a takeover of it, an operator's session) does not hold
   * up the batch's replays and new keys. Before, the batch locked every existing row it met.
   */
  @Test
  void aBatchClaimDoesNotWaitForTheLockOfARowItOnlyReplays() throws Exception {
    for (boolean readFirst : new boolean[] {true, false}) {
      JdbcStore store = JdbcStore.builder(Databases.Postgres.DATA_SOURCE)
          .dialect(JdbcDialect.POSTGRESQL).table(Databases.Postgres.TABLE)
          .claimOrder(ClaimOrder.fixed(readFirst)).build();
      Instant now = Instant.now();
      IdempotencyKey done = completed(store, key("locked-done-" + readFirst), now);
      IdempotencyKey fresh = key("locked-new-" + readFirst);
      try (java.sql.Connection holder = Databases.Postgres.DATA_SOURCE.getConnection()) {
        holder.setAutoCommit(false);
        try (java.sql.PreparedStatement lock = holder.prepareStatement("SELECT 1 FROM "
            + Databases.Postgres.TABLE + " WHERE scope = ? AND idem_key = ? FOR UPDATE")) {
          lock.setString(1, done.scope());
          lock.setString(2, done.key());
          lock.executeQuery().close();
        }
        java.util.concurrent.CompletableFuture<List<Claim>> batch =
            java.util.concurrent.CompletableFuture.supplyAsync(() -> store.claimAll(
                List.of(request(done, now), request(fresh, now))));
        // Answered while the lock is still held (a batch that locked would wait for it).
        assertThat(batch.get(20, java.util.concurrent.TimeUnit.SECONDS))
            .as("read first: %s", readFirst)
            .hasExactlyElementsOfTypes(Claim.Replay.class, Claim.Acquired.class);
        holder.rollback();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  private static IdempotencyKey completed(JdbcStore store, IdempotencyKey key, Instant now) {
    Claim.Acquired acquired = (Claim.Acquired) store.claim(request(key, now));
    store.complete(key, acquired.token(), Outcome.success("text/plain", new byte[] {1}), now,
        RETENTION);
    return key;
  }

  private IdempotencyKey key(String k) {
    return IdempotencyKey.of(scope, k);
  }

  private static ClaimRequest request(IdempotencyKey key, Instant now) {
    return new ClaimRequest(key, FP, now, LEASE, RETENTION);
  }

  private static void assertReplay(JdbcStore store, IdempotencyKey key, Instant now) {
    assertThat(store.claim(request(key, now))).isInstanceOf(Claim.Replay.class);
  }

  private static void assertAcquired(JdbcStore store, IdempotencyKey key, Instant now) {
    assertThat(store.claim(request(key, now))).isInstanceOf(Claim.Acquired.class);
  }

  /** A call of {@code key}, whose first call returned "ran", replays that. */
  private static void assertReplayed(TransactionalOnce once, IdempotencyKey key) {
    Result<String> r = once.call(key, FP, Codecs.utf8(), tx -> "ran again");
    assertThat(r.replayed()).isTrue();
    assertThat(r.value()).isEqualTo("ran");
  }

  /** How many claims it took until one sent {@code expected} (fails after 100). */
  private static int claimsUntil(List<String> expected, java.util.function.Supplier<List<String>>
      claim) {
    for (int i = 1; i <= 100; i++) {
      if (claim.get().equals(expected)) {
        return i;
      }
    }
    throw new AssertionError("no claim sent " + expected + " in 100");
  }
}
