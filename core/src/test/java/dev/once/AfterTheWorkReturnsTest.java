package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codec;
import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.Scheduler;
import dev.once.StoreUnavailableException;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The rule of issue 14: nothing that happens after the work returned may make it run again. A
 * result too large or impossible to encode completes the key with a marker; heartbeats survive
 * whatever one beat throws; {@code ensureLease} checks the lease before an effect.
 */
class AfterTheWorkReturnsTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("body");
  private final ManualClock clock = new ManualClock();
  private final InMemoryStore store = new InMemoryStore();
  private final IdempotencyKey key = IdempotencyKey.of("payments.charge", "evt-1");
  private final List<String> events = new CopyOnWriteArrayList<>();
  private final OnceListener listener = new OnceListener() {
    @Override
    public void onOutcomeNotStored(IdempotencyKey k, long token, Throwable cause) {
      events.add("not-stored:" + cause.getClass().getSimpleName());
    }

    @Override
    public void onHeartbeatFailed(IdempotencyKey k, long token, Throwable error) {
      events.add("heartbeat-failed:" + error.getMessage());
    }

    @Override
    public void onLeaseLost(IdempotencyKey k, long token) {
      events.add("lease-lost");
    }

    @Override
    public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
      events.add("store:" + operation);
    }
  };

  private Once.Builder builder(IdempotencyStore on) {
    return Once.builder(on).clock(clock).lease(LEASE).listener(listener);
  }

  @Test
  void aResultLargerThanTheBoundCompletesTheKeyAndNeverRunsTheWorkAgain() {
    Once once = builder(store).maxPayloadBytes(100).build();
    AtomicInteger effects = new AtomicInteger();
    String big = "x".repeat(101);

    String first = once.execute(key, FP, Codecs.utf8(), a -> {
      effects.incrementAndGet();
      return big;
    });

    assertThat(first).isEqualTo(big);
    IdempotencyRecord record = store.find(key).orElseThrow();
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.outcome().isNotStored()).isTrue();
    assertThat(record.outcome().notStoredReason()).contains("PayloadTooLargeException")
        .contains("101 bytes");
    assertThat(events).contains("not-stored:PayloadTooLargeException");

    for (int retry = 0; retry < 3; retry++) {
      assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
        effects.incrementAndGet();
        return "again";
      })).isInstanceOfSatisfying(OutcomeNotStoredException.class, e -> {
        assertThat(e.key()).isEqualTo(key);
        assertThat(e.reason()).contains("PayloadTooLargeException");
      });
    }
    assertThat(effects).hasValue(1);
  }

  @Test
  void aCodecThatThrowsAfterTheWorkCompletesTheKeyAndNeverRunsTheWorkAgain() {
    Codec<String> broken = new Codec<>() {
      @Override
      public String mediaType() {
        return "text/plain";
      }

      @Override
      public byte[] encode(String value) {
        throw new IllegalStateException("cannot serialise " + value);
      }

      @Override
      public String decode(byte[] bytes) {
        throw new AssertionError("nothing was stored to decode");
      }
    };
    Once once = builder(store).build();
    AtomicInteger effects = new AtomicInteger();

    assertThat(once.execute(key, FP, broken, a -> "charge-" + effects.incrementAndGet()))
        .isEqualTo("charge-1");
    assertThatThrownBy(() -> once.execute(key, FP, broken, a -> "charge-"
        + effects.incrementAndGet()))
        .isInstanceOf(OutcomeNotStoredException.class)
        .hasMessageContaining("cannot serialise charge-1");

    assertThat(effects).hasValue(1);
    assertThat(events).contains("not-stored:IllegalStateException");
  }

  @Test
  void theMarkerIsBoundedAndRecognisable() {
    Outcome marker = Outcome.notStored("r".repeat(5000));

    assertThat(marker.kind()).isEqualTo(Outcome.Kind.SUCCESS);
    assertThat(marker.mediaType()).isEqualTo(Outcome.NOT_STORED_MEDIA_TYPE);
    assertThat(marker.notStoredReason()).hasSize(1000);
    assertThat(Outcome.success("text/plain", new byte[0]).isNotStored()).isFalse();
    assertThat(Outcome.failure("x.Y", "no").isNotStored()).isFalse();
  }

  @Test
  void heartbeatsGoOnAfterABeatThrowsAnythingAndTellTheListener() {
    // The store's extend fails in three ways in a row, then works again: every beat still runs.
    AtomicInteger extendCalls = new AtomicInteger();
    IdempotencyStore flaky = failingExtends(store, extendCalls, List.of(
        new IllegalStateException("driver bug"),
        new StoreUnavailableException("connection reset", null),
        new NullPointerException("npe in a pool")));
    OnceTest.ManualScheduler scheduler = new OnceTest.ManualScheduler();
    Once once = builder(flaky).heartbeat(scheduler).build();

    String result = once.execute(key, FP, Codecs.utf8(), a -> {
      for (int beat = 0; beat < 5; beat++) {
        clock.advance(Duration.ofSeconds(10));
        scheduler.tick();
      }
      return "done";
    });

    assertThat(result).isEqualTo("done");
    assertThat(extendCalls).hasValue(5);
    assertThat(events).contains("heartbeat-failed:driver bug",
        "heartbeat-failed:connection reset", "heartbeat-failed:npe in a pool");
    // The two beats after the failures extended the lease to 50 s + 30 s.
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void schedulerOfKeepsRunningATaskAfterItThrows() throws Exception {
    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor();
    try {
      AtomicInteger runs = new AtomicInteger();
      CountDownLatch fiveRuns = new CountDownLatch(5);
      Scheduler.Task task = Scheduler.of(executor).scheduleAtFixedRate(() -> {
        int run = runs.incrementAndGet();
        fiveRuns.countDown();
        if (run % 2 == 1) {
          throw new IllegalStateException("beat " + run + " failed");
        }
      }, Duration.ofMillis(1));

      // Waits for the runs to happen (bounded), it does not sleep for time to pass.
      assertThat(fiveRuns.await(30, TimeUnit.SECONDS)).as("runs after a throwing run").isTrue();
      task.cancel();
      assertThat(runs.get()).isGreaterThanOrEqualTo(5);
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void ensureLeaseCostsNothingWhileMoreThanAThirdIsLeft() {
    Once once = builder(store).build();

    once.execute(key, FP, Codecs.utf8(), a -> {
      events.clear();
      a.ensureLease();
      clock.advance(Duration.ofSeconds(19)); // 11 s left: more than a third (10 s)
      a.ensureLease();
      assertThat(events).doesNotContain("store:extend");
      return "ok";
    });
  }

  @Test
  void ensureLeaseExtendsWhenLittleIsLeftAndThrowsOnceAnotherWorkerTookOver() {
    Once once = builder(store).build();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      clock.advance(Duration.ofSeconds(25)); // 5 s left
      a.ensureLease();
      assertThat(events).contains("store:extend");
      assertThat(a.leaseUntil()).isEqualTo(clock.instant().plus(LEASE));

      // Frozen past the lease; another worker takes the key over.
      clock.advance(LEASE.plusSeconds(1));
      store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE, Duration.ofHours(1)));
      a.ensureLease();
      throw new AssertionError("the effect must not start without the lease");
    })).isInstanceOf(LeaseLostException.class);
    assertThat(events).contains("lease-lost");
  }

  /** {@code delegate}, except that its first extends throw {@code failures} in turn. */
  private static IdempotencyStore failingExtends(IdempotencyStore delegate, AtomicInteger calls,
      List<RuntimeException> failures) {
    return (IdempotencyStore) Proxy.newProxyInstance(IdempotencyStore.class.getClassLoader(),
        new Class<?>[] {IdempotencyStore.class}, (proxy, method, args) -> {
          if (method.getName().equals("extend")) {
            int call = calls.getAndIncrement();
            if (call < failures.size()) {
              throw failures.get(call);
            }
          }
          try {
            return method.invoke(delegate, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }
}
