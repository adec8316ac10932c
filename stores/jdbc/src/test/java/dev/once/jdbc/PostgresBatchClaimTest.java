package dev.once.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.jdbc.internal.ClaimOrder;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiPredicate;
import javax.sql.DataSource;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Batch claims on PostgreSQL against interleavings (another session acts between two of the
 * batch's statements, injected just before the statement is prepared) and against the sequential
 * model (each request decided by {@code ClaimRules} after the ones before it), in both claim
 * orders. Written by a review of the batch claim that reads before it locks (issue 27).
 */
@Tag("postgres")
class PostgresBatchClaimTest {

  private static final Fingerprint FP = Fingerprint.of("a");
  private static final Fingerprint FP2 = Fingerprint.of("b");
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final Instant T0 = Instant.now().truncatedTo(ChronoUnit.MILLIS);

  private final String scope = "batch." + UUID.randomUUID().toString().substring(0, 8);

  private IdempotencyKey key(String k) {
    return IdempotencyKey.of(scope, k);
  }

  private static ClaimRequest request(IdempotencyKey key, Instant now) {
    return new ClaimRequest(key, FP, now, LEASE, RETENTION);
  }

  /** Runs {@code hook} once, just before the first statement matching {@code when} is prepared. */
  static final class Hooked {
    final DataSource dataSource;
    final AtomicBoolean fired = new AtomicBoolean();

    Hooked(DataSource delegate, BiPredicate<String, Boolean> when, Runnable hook) {
      dataSource = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
          new Class<?>[] {DataSource.class}, (p, m, a) -> {
            Object r = invoke(m, delegate, a);
            if (!m.getName().equals("getConnection")) {
              return r;
            }
            Connection c = (Connection) r;
            return Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {Connection.class}, (p2, m2, a2) -> {
                  if (m2.getName().equals("prepareStatement") && a2 != null
                      && a2[0] instanceof String sql && when.test(sql, c.getAutoCommit())
                      && fired.compareAndSet(false, true)) {
                    hook.run();
                  }
                  return invoke(m2, c, a2);
                });
          });
    }

    private static Object invoke(java.lang.reflect.Method m, Object target, Object[] a)
        throws Throwable {
      try {
        return m.invoke(target, a);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }

  static boolean isReadAll(String sql) {
    return sql.startsWith("SELECT") && sql.contains("unnest") && !sql.contains("FOR UPDATE");
  }

  static boolean isLockAll(String sql) {
    return sql.startsWith("SELECT") && sql.contains("unnest") && sql.contains("FOR UPDATE");
  }

  private JdbcStore store(DataSource ds, boolean readFirst) {
    return JdbcStore.builder(ds).dialect(JdbcDialect.POSTGRESQL).table(Databases.Postgres.TABLE)
        .claimOrder(ClaimOrder.fixed(readFirst)).build();
  }

  private void delete(IdempotencyKey k) {
    try (Connection c = Databases.Postgres.DATA_SOURCE.getConnection();
        PreparedStatement ps = c.prepareStatement("DELETE FROM " + Databases.Postgres.TABLE
            + " WHERE scope = ? AND tenant = ? AND idem_key = ?")) {
      ps.setString(1, k.scope());
      ps.setString(2, k.tenant());
      ps.setString(3, k.key());
      assertThat(ps.executeUpdate()).isEqualTo(1);
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private IdempotencyKey completed(JdbcStore s, String name) {
    IdempotencyKey k = key(name);
    Claim.Acquired a = (Claim.Acquired) s.claim(request(k, T0));
    s.complete(k, a.token(), Outcome.success("t", new byte[] {1}), T0, RETENTION);
    return k;
  }

  /**
   * Insert-first: a row purged between the batch's insert and its read is claimed anew (the lock
   * finds no row, the batch runs again and inserts it).
   */
  @org.junit.jupiter.api.Test
  void aRowPurgedBetweenTheInsertAndTheReadIsClaimedAnew() {
    JdbcStore plain = store(Databases.Postgres.DATA_SOURCE, false);
    IdempotencyKey done = completed(plain, "done-insert-first");
    List<Claim> claims = claimWithNewKeyPurgingBefore(done, false,
        (sql, auto) -> !auto && isReadAll(sql));
    assertThat(claims).hasExactlyElementsOfTypes(Claim.Acquired.class, Claim.Acquired.class);
    assertThat(plain.find(done).orElseThrow().token())
        .isEqualTo(((Claim.Acquired) claims.get(0)).token());
  }

  /**
   * Read-first: a row the first read saw completed, purged before the transaction inserts the
   * batch's new key, is answered as the replay it was when read (as a single claim answers from
   * the row it read) and not written back.
   */
  @org.junit.jupiter.api.Test
  void aReplayReadFirstAndPurgedBeforeTheInsertStaysAReplayAndPurged() {
    JdbcStore plain = store(Databases.Postgres.DATA_SOURCE, true);
    IdempotencyKey done = completed(plain, "done-read-first");
    List<Claim> claims = claimWithNewKeyPurgingBefore(done, true,
        (sql, auto) -> !auto && sql.startsWith("INSERT"));
    assertThat(claims).hasExactlyElementsOfTypes(Claim.Replay.class, Claim.Acquired.class);
    assertThat(plain.find(done)).isEmpty();
  }

  /**
   * Claims {@code done} and a new key in one batch, {@code done}'s row deleted by another session
   * just before the batch prepares the statement {@code when} picks (which must come).
   */
  private List<Claim> claimWithNewKeyPurgingBefore(IdempotencyKey done, boolean readFirst,
      BiPredicate<String, Boolean> when) {
    IdempotencyKey fresh = key("fresh-of-" + done.key());
    Hooked hooked = new Hooked(Databases.Postgres.DATA_SOURCE, when, () -> delete(done));
    List<Claim> claims = store(hooked.dataSource, readFirst)
        .claimAll(List.of(request(done, T0.plusSeconds(1)), request(fresh, T0.plusSeconds(1))));
    assertThat(hooked.fired).isTrue();
    return claims;
  }

  /** An expired lease read unlocked, taken over by someone else before the batch locks it. */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void anExpiredLeaseTakenOverBetweenTheReadAndTheLockIsAnsweredInProgress(boolean readFirst) {
    JdbcStore plain = store(Databases.Postgres.DATA_SOURCE, readFirst);
    IdempotencyKey k = key("expired-" + readFirst);
    IdempotencyKey fresh = key("fresh2-" + readFirst);
    plain.claim(request(k, T0));
    Instant later = T0.plus(LEASE).plusSeconds(1);
    Claim[] other = new Claim[1];
    Hooked hooked = new Hooked(Databases.Postgres.DATA_SOURCE,
        (sql, auto) -> isLockAll(sql), () -> other[0] = plain.claim(request(k, later)));
    List<Claim> claims = store(hooked.dataSource, readFirst)
        .claimAll(List.of(request(k, later), request(fresh, later)));
    assertThat(hooked.fired).isTrue();
    assertThat(other[0]).isInstanceOf(Claim.Acquired.class);
    assertThat(claims.get(0)).isEqualTo(new Claim.InProgress(later.plus(LEASE)));
    assertThat(plain.find(k).orElseThrow().token())
        .isEqualTo(((Claim.Acquired) other[0]).token());
  }

  /** A row replayed from the unlocked read, purged before the batch commits: not resurrected. */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aReplayedRowPurgedBeforeTheBatchCommitsIsNotWrittenBack(boolean readFirst) {
    JdbcStore plain = store(Databases.Postgres.DATA_SOURCE, readFirst);
    IdempotencyKey done = completed(plain, "done3-" + readFirst);
    IdempotencyKey failed = key("failed3-" + readFirst);
    long t = ((Claim.Acquired) plain.claim(request(failed, T0))).token();
    plain.fail(failed, t, "retry", T0, RETENTION);
    Hooked hooked = new Hooked(Databases.Postgres.DATA_SOURCE,
        (sql, auto) -> isLockAll(sql), () -> delete(done));
    List<Claim> claims = store(hooked.dataSource, readFirst)
        .claimAll(List.of(request(done, T0.plusSeconds(1)), request(failed, T0.plusSeconds(1))));
    assertThat(hooked.fired).isTrue();
    assertThat(claims).hasExactlyElementsOfTypes(Claim.Replay.class, Claim.Acquired.class);
    assertThat(plain.find(done)).isEmpty();
  }

  // --------------------------------------------------------------------------------------------

  enum Start { NONE, COMPLETED, LIVE, LIVE_OTHER_FP, FAILED, RETENTION_PASSED }

  /** Random batches against every starting state: answers and rows as sequential decisions. */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void randomBatchesAnswerAndStoreWhatSequentialDecisionsWould(boolean readFirst) {
    JdbcStore s = store(Databases.Postgres.DATA_SOURCE, readFirst);
    Random rnd = new Random(readFirst ? 1 : 2);
    for (int iter = 0; iter < 300; iter++) {
      int nKeys = 1 + rnd.nextInt(4);
      List<IdempotencyKey> keys = new ArrayList<>();
      Map<IdempotencyKey, Long> setupClaimIds = new HashMap<>();
      for (int i = 0; i < nKeys; i++) {
        IdempotencyKey k = key("m" + iter + "-" + i);
        keys.add(k);
        Start st = Start.values()[rnd.nextInt(Start.values().length)];
        long cid = ClaimRequest.newClaimId();
        setupClaimIds.put(k, cid);
        Duration ret = st == Start.RETENTION_PASSED ? Duration.ofSeconds(2) : RETENTION;
        Fingerprint fp = st == Start.LIVE_OTHER_FP ? FP2 : FP;
        if (st != Start.NONE) {
          Claim.Acquired a = (Claim.Acquired) s.claim(
              new ClaimRequest(k, fp, T0, LEASE, ret, cid));
          if (st == Start.COMPLETED || st == Start.RETENTION_PASSED) {
            s.complete(k, a.token(), Outcome.success("t", new byte[] {2}), T0, ret);
          } else if (st == Start.FAILED) {
            s.fail(k, a.token(), "boom", T0, RETENTION);
          }
        }
      }
      Instant[] nows = {T0.plusSeconds(1), T0.plusSeconds(5), T0.plus(LEASE),
          T0.plus(LEASE).plusSeconds(3)};
      int n = 2 + rnd.nextInt(6);
      List<ClaimRequest> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        if (!batch.isEmpty() && rnd.nextInt(8) == 0) {
          batch.add(batch.get(rnd.nextInt(batch.size()))); // the same request twice
          continue;
        }
        IdempotencyKey k = keys.get(rnd.nextInt(keys.size()));
        Fingerprint fp = rnd.nextInt(5) == 0 ? FP2 : FP;
        long cid = rnd.nextInt(6) == 0 ? setupClaimIds.get(k) : ClaimRequest.newClaimId();
        batch.add(new ClaimRequest(k, fp, nows[rnd.nextInt(nows.length)], LEASE, RETENTION,
            cid));
      }
      Map<IdempotencyKey, IdempotencyRecord> model = new LinkedHashMap<>();
      for (IdempotencyKey k : keys) {
        model.put(k, s.find(k).orElse(null));
      }
      List<Claim> expected = new ArrayList<>();
      for (ClaimRequest r : batch) {
        ClaimRules.Decision d = ClaimRules.decide(model.get(r.key()), r);
        expected.add(d.claim());
        if (d.next() != null) {
          model.put(r.key(), d.next());
        }
      }
      List<Claim> actual = s.claimAll(batch);
      assertThat(actual).as("iteration %d, batch %s", iter, batch).isEqualTo(expected);
      for (IdempotencyKey k : keys) {
        assertThat(s.find(k)).as("iteration %d, record of %s", iter, k)
            .isEqualTo(Optional.ofNullable(model.get(k)));
      }
    }
  }

  /**
   * Racing batches, single claims, completions and failures on 8 threads for 2 s per order, with
   * 15 ms leases so that takeovers happen: no (key, token) is ever acquired twice.
   */
  @ParameterizedTest
  @ValueSource(ints = {0, 1, 2})
  void racingBatchesSingleClaimsAndCompletionsNeverAcquireATokenTwice(int order) throws Exception {
    JdbcStore s = JdbcStore.builder(Databases.Postgres.DATA_SOURCE)
        .dialect(JdbcDialect.POSTGRESQL).table(Databases.Postgres.TABLE)
        .claimOrder(order == 2 ? ClaimOrder.adaptive() : ClaimOrder.fixed(order == 1)).build();
    List<IdempotencyKey> keys = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      keys.add(key("race" + order + "-" + i));
    }
    Duration lease = Duration.ofMillis(15);
    Duration retention = Duration.ofMillis(150);
    java.util.concurrent.ConcurrentHashMap<String, Integer> acquired =
        new java.util.concurrent.ConcurrentHashMap<>();
    java.util.concurrent.atomic.AtomicInteger counts = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
    long end = System.nanoTime() + 2_000_000_000L;
    List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      int seed = t;
      fs.add(pool.submit(() -> {
        Random rnd = new Random(seed);
        while (System.nanoTime() < end) {
          int n = rnd.nextInt(6) == 0 ? 1 : 2 + rnd.nextInt(5);
          List<ClaimRequest> batch = new ArrayList<>();
          for (int i = 0; i < n; i++) {
            batch.add(new ClaimRequest(keys.get(rnd.nextInt(keys.size())),
                rnd.nextInt(10) == 0 ? FP2 : FP, Instant.now(), lease, retention));
          }
          List<Claim> claims = s.claimAll(batch);
          for (int i = 0; i < n; i++) {
            if (claims.get(i) instanceof Claim.Acquired a) {
              counts.incrementAndGet();
              IdempotencyKey k = batch.get(i).key();
              Integer prev = acquired.put(k.key() + "#" + a.token(), 1);
              assertThat(prev).as("%s token %d acquired twice", k, a.token()).isNull();
              int what = rnd.nextInt(3);
              try {
                if (what == 0) {
                  s.complete(k, a.token(), Outcome.success("t", new byte[] {3}), Instant.now(),
                      retention);
                } else if (what == 1) {
                  s.fail(k, a.token(), "x", Instant.now(), retention);
                }
              } catch (dev.once.LeaseLostException lost) {
                // taken over meanwhile: expected with 15 ms leases
              }
            }
          }
        }
        return null;
      }));
    }
    try {
      for (var f : fs) {
        f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(counts.get()).as("claims acquired").isPositive();
  }
}
