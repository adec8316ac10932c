package dev.once.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codec;
import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.OutcomeUnknownException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Scheduler;
import dev.once.StoreUnavailableException;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.testkit.ManualClock;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** Real executions over {@link InMemoryStore}, observed through a {@link SimpleMeterRegistry}. */
class MicrometerOnceListenerTest {

  static final Duration LEASE = Duration.ofSeconds(30);

  final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  final InMemoryStore store = new InMemoryStore();
  final ManualClock clock = new ManualClock();
  final MicrometerOnceListener listener = MicrometerOnceListener.builder(registry).store(store)
      .tags("app", "payments").build();
  final Once once = Once.builder(store).lease(LEASE).clock(clock).listener(listener)
      .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
      .build();

  double outcomes(String outcome, String scope) {
    Counter counter = registry.find(OnceMetrics.OUTCOMES).tag(OnceMetrics.TAG_OUTCOME, outcome)
        .tag(OnceMetrics.TAG_SCOPE, scope).counter();
    return counter == null ? 0 : counter.count();
  }

  long executions(String result, String scope) {
    Timer timer = registry.find(OnceMetrics.EXECUTIONS).tag(OnceMetrics.TAG_RESULT, result)
        .tag(OnceMetrics.TAG_SCOPE, scope).timer();
    return timer == null ? 0 : timer.count();
  }

  long storeCalls(String operation, String result) {
    Timer timer = registry.find(OnceMetrics.STORE_CALLS).tag(OnceMetrics.TAG_OPERATION, operation)
        .tag(OnceMetrics.TAG_RESULT, result).timer();
    return timer == null ? 0 : timer.count();
  }

  static void await(CountDownLatch latch) {
    try {
      if (!latch.await(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("latch never released");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  String run(String scope, String key, String body) {
    return once.execute(IdempotencyKey.of(scope, key), Fingerprint.of(body), Codecs.utf8(),
        attempt -> "done " + body);
  }

  @Test
  void everyTimerReadsTheOncesTickerSoATestMovesTimeInsteadOfSleeping() {
    java.util.concurrent.atomic.AtomicLong nanos = new java.util.concurrent.atomic.AtomicLong();
    Once ticking = once.toBuilder().ticker(nanos::get).build();
    ticking.execute(IdempotencyKey.of("payments", "ok"), Fingerprint.of("a"), Codecs.utf8(),
        attempt -> {
          nanos.addAndGet(Duration.ofMillis(30).toNanos());
          return "v";
        });
    assertThatThrownBy(() -> ticking.execute(IdempotencyKey.of("payments", "bad"),
        Fingerprint.of("a"), Codecs.utf8(), attempt -> {
          nanos.addAndGet(Duration.ofMillis(70).toNanos());
          throw new IllegalStateException("gateway down");
        })).hasMessage("gateway down");

    Timer completed = registry.find(OnceMetrics.EXECUTIONS)
        .tag(OnceMetrics.TAG_RESULT, OnceMetrics.COMPLETED).timer();
    Timer failed = registry.find(OnceMetrics.EXECUTIONS)
        .tag(OnceMetrics.TAG_RESULT, OnceMetrics.FAILED).timer();
    assertThat(completed.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(30.0);
    assertThat(failed.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(70.0);
    assertThat(registry.find(OnceMetrics.STORE_CALLS).tag(OnceMetrics.TAG_OPERATION, "claim")
        .timer().totalTime(TimeUnit.NANOSECONDS)).isZero();
  }

  @Test
  void countsAcquisitionsCompletionsAndReplaysPerScope() {
    run("payments", "k1", "a");
    run("payments", "k1", "a");
    run("payments", "k1", "a");
    run("refunds", "k1", "a");

    assertThat(outcomes(OnceMetrics.ACQUIRED, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.COMPLETED, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.REPLAYED, "payments")).isEqualTo(2);
    assertThat(outcomes(OnceMetrics.ACQUIRED, "refunds")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.REPLAYED, "refunds")).isZero();
    assertThat(executions(OnceMetrics.COMPLETED, "payments")).isEqualTo(1);
    assertThat(storeCalls("claim", OnceMetrics.SUCCESS)).isEqualTo(4);
    assertThat(storeCalls("complete", OnceMetrics.SUCCESS)).isEqualTo(2);
  }

  @Test
  void everyMeterCarriesTheStoreAndCommonTags() {
    run("payments", "k1", "a");

    assertThat(registry.getMeters()).isNotEmpty().allSatisfy(meter -> {
      assertThat(meter.getId().getTag(OnceMetrics.TAG_STORE)).isEqualTo("inmemory");
      assertThat(meter.getId().getTag("app")).isEqualTo("payments");
    });
  }

  @Test
  void countsMismatches() {
    run("payments", "k1", "a");
    assertThatThrownBy(() -> run("payments", "k1", "b")).isInstanceOf(KeyReusedException.class);

    assertThat(outcomes(OnceMetrics.MISMATCH, "payments")).isEqualTo(1);
  }

  @Test
  void countsDuplicatesTurnedAwayWhileTheOriginalRuns() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> original = CompletableFuture.supplyAsync(() ->
        once.execute(IdempotencyKey.of("payments", "k1"), Fingerprint.of("a"), Codecs.utf8(),
            attempt -> {
              entered.countDown();
              await(release);
              return "done";
            }));
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    assertThatThrownBy(() -> run("payments", "k1", "a"))
        .isInstanceOf(RequestInProgressException.class);
    release.countDown();
    original.get(10, TimeUnit.SECONDS);

    assertThat(outcomes(OnceMetrics.IN_PROGRESS, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.COMPLETED, "payments")).isEqualTo(1);
  }

  @Test
  void timesAndCountsRetryableAndTerminalFailures() {
    IdempotencyKey retryable = IdempotencyKey.of("payments", "k1");
    assertThatThrownBy(() -> once.execute(retryable, Fingerprint.of("a"), Codecs.utf8(),
        attempt -> {
          throw new IllegalStateException("gateway down");
        })).isInstanceOf(IllegalStateException.class);
    run("payments", "k1", "a");

    IdempotencyKey terminal = IdempotencyKey.of("payments", "k2");
    assertThatThrownBy(() -> once.execute(terminal, Fingerprint.of("a"), Codecs.utf8(),
        attempt -> {
          throw new IllegalArgumentException("card declined");
        })).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> run("payments", "k2", "a"))
        .isInstanceOf(ReplayedFailureException.class);

    assertThat(outcomes(OnceMetrics.FAILED, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.FAILED_TERMINAL, "payments")).isEqualTo(1);
    // The retry after a retryable failure acquires the FAILED record: no lease had to pass.
    assertThat(outcomes(OnceMetrics.ACQUIRED, "payments")).isEqualTo(3);
    assertThat(outcomes(OnceMetrics.TAKEOVER, "payments")).isZero();
    assertThat(outcomes(OnceMetrics.REPLAYED, "payments")).isEqualTo(1);
    assertThat(executions(OnceMetrics.FAILED, "payments")).isEqualTo(1);
    assertThat(executions(OnceMetrics.FAILED_TERMINAL, "payments")).isEqualTo(1);
    assertThat(executions(OnceMetrics.COMPLETED, "payments")).isEqualTo(1);
    assertThat(storeCalls("fail", OnceMetrics.SUCCESS)).isEqualTo(1);
  }

  @Test
  void countsTakeoversAndTheLeaseLostByTheStalledWorker() throws Exception {
    IdempotencyKey key = IdempotencyKey.of("payments", "k1");
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> stalled = CompletableFuture.supplyAsync(() ->
        once.execute(key, Fingerprint.of("a"), Codecs.utf8(), attempt -> {
          entered.countDown();
          await(release);
          return "late";
        }));
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    clock.advance(LEASE.plusSeconds(1));
    assertThat(run("payments", "k1", "a")).isEqualTo("done a");
    release.countDown();

    assertThatThrownBy(() -> stalled.join()).hasCauseInstanceOf(LeaseLostException.class);
    assertThat(outcomes(OnceMetrics.ACQUIRED, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.TAKEOVER, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.LEASE_LOST, "payments")).isEqualTo(1);
    assertThat(executions(OnceMetrics.LEASE_LOST, "payments")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.COMPLETED, "payments")).isEqualTo(1);
    assertThat(storeCalls("complete", OnceMetrics.ERROR)).isEqualTo(1);
  }

  @Test
  void timesStoreCallsThatFail() throws Exception {
    Path dir = Files.createTempDirectory("once-micrometer");
    // A real store whose table was never created: every call fails as with a lost database.
    JdbcStore broken = JdbcStore.builder(JdbcStore.sqliteDataSource(dir.resolve("empty.db")))
        .dialect(JdbcDialect.SQLITE).build();
    Once failing = Once.builder(broken)
        .listener(MicrometerOnceListener.builder(registry).store(broken).build()).build();

    assertThatThrownBy(() -> failing.execute(IdempotencyKey.of("payments", "k1"),
        Fingerprint.of("a"), Codecs.utf8(), attempt -> "never"))
        .isInstanceOf(StoreUnavailableException.class);

    Timer timer = registry.find(OnceMetrics.STORE_CALLS).tag(OnceMetrics.TAG_STORE, "jdbc")
        .tag(OnceMetrics.TAG_OPERATION, "claim").tag(OnceMetrics.TAG_RESULT, OnceMetrics.ERROR)
        .timer();
    assertThat(timer).isNotNull();
    assertThat(timer.count()).isEqualTo(1);
    broken.close();
  }

  @Test
  void countsCoalescingDetoursByKindAndOperation() {
    listener.onCoalescingDetour(OnceListener.CoalescingDetour.ESCAPE, "claim", 12);
    listener.onCoalescingDetour(OnceListener.CoalescingDetour.ESCAPE, "claim", 3);
    listener.onCoalescingDetour(OnceListener.CoalescingDetour.BATCH_FAILED, "complete", 5);

    assertThat(detours(OnceMetrics.ESCAPE, "claim")).isEqualTo(2);
    assertThat(detours(OnceMetrics.BATCH_FAILED, "complete")).isEqualTo(1);
    assertThat(detours(OnceMetrics.BATCH_FAILED, "claim")).isZero();
    assertThat(registry.find(OnceMetrics.COALESCING_DETOURS).tag("app", "payments")
        .tag(OnceMetrics.TAG_STORE, "inmemory").counters()).hasSize(2);
  }

  double detours(String detour, String operation) {
    Counter counter = registry.find(OnceMetrics.COALESCING_DETOURS)
        .tag(OnceMetrics.TAG_DETOUR, detour).tag(OnceMetrics.TAG_OPERATION, operation).counter();
    return counter == null ? 0 : counter.count();
  }

  @Test
  void theScopeTagCanBeTurnedOff() {
    SimpleMeterRegistry own = new SimpleMeterRegistry();
    Once quiet = Once.builder(new InMemoryStore())
        .listener(MicrometerOnceListener.builder(own).storeName("memory").scopeTag(false).build())
        .build();
    quiet.execute(IdempotencyKey.of("a", "k"), Fingerprint.of("x"), Codecs.utf8(), t -> "1");
    quiet.execute(IdempotencyKey.of("b", "k"), Fingerprint.of("x"), Codecs.utf8(), t -> "1");

    Counter acquired = own.find(OnceMetrics.OUTCOMES)
        .tag(OnceMetrics.TAG_OUTCOME, OnceMetrics.ACQUIRED).counter();
    assertThat(acquired.getId().getTag(OnceMetrics.TAG_SCOPE)).isEqualTo("all");
    assertThat(acquired.getId().getTag(OnceMetrics.TAG_STORE)).isEqualTo("memory");
    assertThat(acquired.count()).isEqualTo(2);
  }

  @Test
  void countsResultsThatCouldNotBeStored() {
    Once bounded = Once.builder(store).clock(clock).listener(listener).maxPayloadBytes(16).build();
    IdempotencyKey big = IdempotencyKey.of("reports", "r1");
    String value = "a result longer than sixteen bytes";
    assertThat(bounded.execute(big, Fingerprint.of("a"), Codecs.utf8(), attempt -> value))
        .isEqualTo(value);
    assertThatThrownBy(() -> bounded.execute(big, Fingerprint.of("a"), Codecs.utf8(),
        attempt -> "never")).isInstanceOf(OutcomeNotStoredException.class);

    Codec<String> broken = new Codec<>() {
      @Override
      public String mediaType() {
        return "text/plain";
      }

      @Override
      public byte[] encode(String v) {
        throw new IllegalStateException("cannot encode");
      }

      @Override
      public String decode(byte[] bytes) {
        throw new AssertionError("never replayed");
      }
    };
    once.execute(IdempotencyKey.of("reports", "r2"), Fingerprint.of("a"), broken, attempt -> "x");

    assertThat(outcomes(OnceMetrics.NOT_STORED, "reports")).isEqualTo(2);
    // The marker completes the key: the executions are counted completed, and the duplicate is a
    // replay (of the marker), not a run.
    assertThat(outcomes(OnceMetrics.COMPLETED, "reports")).isEqualTo(2);
    assertThat(outcomes(OnceMetrics.REPLAYED, "reports")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.ACQUIRED, "reports")).isEqualTo(2);
    assertThat(outcomes(OnceMetrics.FAILED, "reports")).isZero();
    assertThat(executions(OnceMetrics.COMPLETED, "reports")).isEqualTo(2);
  }

  @Test
  void countsHeartbeatsThatCouldNotExtendTheLease() throws Exception {
    Path dir = Files.createTempDirectory("once-micrometer");
    DataSource dataSource = JdbcStore.sqliteDataSource(dir.resolve("beats.db"));
    JdbcStore sqlite = JdbcStore.builder(dataSource).dialect(JdbcDialect.SQLITE).build();
    sqlite.createSchema();
    // The heartbeat task is run by hand, so each beat happens exactly when the test says.
    AtomicReference<Runnable> beat = new AtomicReference<>();
    Scheduler byHand = (task, period) -> {
      beat.set(task);
      return () -> beat.set(null);
    };
    Once beating = Once.builder(sqlite).heartbeat(byHand)
        .listener(MicrometerOnceListener.builder(registry).store(sqlite).build()).build();

    String value = beating.execute(IdempotencyKey.of("exports", "e1"), Fingerprint.of("a"),
        Codecs.utf8(), attempt -> {
          beat.get().run(); // extends the lease
          // The table goes away (as with a database that is failing): two beats fail.
          sql(dataSource, "ALTER TABLE once_records RENAME TO once_records_away");
          beat.get().run();
          beat.get().run();
          sql(dataSource, "ALTER TABLE once_records_away RENAME TO once_records");
          beat.get().run(); // extends again
          return "exported";
        });

    assertThat(value).isEqualTo("exported");
    Counter failures = registry.find(OnceMetrics.HEARTBEAT_FAILURES)
        .tag(OnceMetrics.TAG_SCOPE, "exports").tag(OnceMetrics.TAG_STORE, "jdbc").counter();
    assertThat(failures).isNotNull();
    assertThat(failures.count()).isEqualTo(2);
    assertThat(failures.getId().getTag(OnceMetrics.TAG_EXCEPTION))
        .isEqualTo(dev.once.SchemaMissingException.class.getSimpleName()); // the table is gone
    assertThat(storeCalls("extend", OnceMetrics.SUCCESS)).isEqualTo(2);
    assertThat(storeCalls("extend", OnceMetrics.ERROR)).isEqualTo(2);
    assertThat(outcomes(OnceMetrics.COMPLETED, "exports")).isEqualTo(1);
    assertThat(outcomes(OnceMetrics.LEASE_LOST, "exports")).isZero();
    sqlite.close();
  }

  @Test
  void countsOutcomesWhoseStoringFailedEvenWhenRepeated() throws Exception {
    Path dir = Files.createTempDirectory("once-micrometer");
    DataSource dataSource = JdbcStore.sqliteDataSource(dir.resolve("unknown.db"));
    JdbcStore sqlite = JdbcStore.builder(dataSource).dialect(JdbcDialect.SQLITE).build();
    sqlite.createSchema();
    Once once = Once.builder(sqlite).sleeper(pause -> { })
        .listener(MicrometerOnceListener.builder(registry).store(sqlite).build()).build();

    // The table goes away after the work (as with a database that fails then): every completion
    // attempt fails, and the caller is told the outcome is unknown.
    assertThatThrownBy(() -> once.execute(IdempotencyKey.of("exports", "e2"),
        Fingerprint.of("a"), Codecs.utf8(), attempt -> {
          sql(dataSource, "ALTER TABLE once_records RENAME TO once_records_away");
          return "exported";
        })).isInstanceOf(OutcomeUnknownException.class);
    sql(dataSource, "ALTER TABLE once_records_away RENAME TO once_records");

    assertThat(outcomes(OnceMetrics.OUTCOME_UNKNOWN, "exports")).isEqualTo(1);
    assertThat(storeCalls("complete", OnceMetrics.ERROR)).isEqualTo(3);
    sqlite.close();
  }

  private static void sql(DataSource dataSource, String statement) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }
}
