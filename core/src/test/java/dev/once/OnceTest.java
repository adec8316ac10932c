package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.InProgressPolicy;
import dev.once.LeaseLostException;
import dev.once.Maintenance;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.Scheduler;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Behaviour of {@link Once} itself: policies, heartbeat, listener, exceptions. */
class OnceTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("body");
  private final ManualClock clock = new ManualClock();
  private final InMemoryStore store = new InMemoryStore();
  private final IdempotencyKey key = IdempotencyKey.of("payments.charge", "evt-1");

  private Once.Builder builder() {
    return Once.builder(store).clock(clock).lease(LEASE);
  }

  /** Claims {@code key} as another worker would, leaving it IN_PROGRESS. */
  private Claim.Acquired holdElsewhere() {
    return (Claim.Acquired) store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE,
        Duration.ofHours(24)));
  }

  @Test
  void checkedExceptionOfTheLogicPassesThroughUnwrapped() {
    Once once = builder().build();
    IOException failure = new IOException("gateway down");

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      throw failure;
    })).isSameAs(failure);
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.FAILED);
    assertThat(store.find(key).orElseThrow().lastError())
        .isEqualTo("java.io.IOException: gateway down");
  }

  @Test
  void errorsPassThroughAndReleaseTheClaim() {
    Once once = builder().build();
    StackOverflowError error = new StackOverflowError("deep");

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      throw error;
    })).isSameAs(error);
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.FAILED);
  }

  @Test
  void terminalPredicateStoresTheFailure() {
    Once once = builder().failurePolicy(FailurePolicy.retryAll()
        .terminalIf(e -> e.getMessage() != null && e.getMessage().startsWith("4"))).build();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      throw new IllegalArgumentException("402 payment required");
    })).isInstanceOf(IllegalArgumentException.class);

    assertThat(store.find(key).orElseThrow().outcome().kind()).isEqualTo(Outcome.Kind.FAILURE);
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "no"))
        .isInstanceOf(ReplayedFailureException.class)
        .hasMessageContaining("402 payment required");
  }

  @Test
  void rejectPolicyAnswersInProgressWithRetryAfter() {
    Claim.Acquired held = holdElsewhere();
    clock.advance(Duration.ofSeconds(10));
    Once once = builder().build();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "no"))
        .isInstanceOfSatisfying(RequestInProgressException.class, e -> {
          assertThat(e.leaseUntil()).isEqualTo(held.leaseUntil());
          assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(20));
        });
  }

  @Test
  void waitPolicyReplaysWhenTheOriginalFinishesWhileWaiting() {
    Claim.Acquired held = holdElsewhere();
    List<Duration> pauses = new ArrayList<>();
    Once once = builder()
        .onInProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(5), Duration.ofMillis(100),
            Duration.ofSeconds(1)))
        .sleeper(d -> {
          pauses.add(d);
          clock.advance(d);
          if (pauses.size() == 3) {
            store.complete(key, held.token(), Outcome.success("text/plain;charset=utf-8",
                "original".getBytes(StandardCharsets.UTF_8)), clock.instant(), Duration.ofHours(1));
          }
        }).build();

    Result<String> result = once.call(key, FP, Codecs.utf8(), a -> "must not run");

    assertThat(result.value()).isEqualTo("original");
    assertThat(result.replayed()).isTrue();
    assertThat(pauses).containsExactly(Duration.ofMillis(100), Duration.ofMillis(200),
        Duration.ofMillis(400));
  }

  @Test
  void waitPolicyGivesUpAtTheBound() {
    holdElsewhere();
    Once once = builder()
        .onInProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(2), Duration.ofMillis(500),
            Duration.ofSeconds(1)))
        .sleeper(clock.sleeper()).build();
    long start = clock.millis();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "no"))
        .isInstanceOf(RequestInProgressException.class);
    assertThat(clock.millis() - start).isEqualTo(2000);
  }

  @Test
  void waitPolicyTakesOverWhenTheLeasePassesWhileWaiting() {
    Claim.Acquired held = holdElsewhere();
    clock.advance(LEASE.minusMillis(300));
    Once once = builder().onInProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(5)))
        .sleeper(clock.sleeper()).build();

    Result<String> result = once.call(key, FP, Codecs.utf8(), a -> "took over: " + a.takeover());

    assertThat(result.value()).isEqualTo("took over: true");
    assertThat(result.token()).isEqualTo(held.token() + 1);
    assertThat(clock.instant()).isEqualTo(held.leaseUntil());
  }

  @Test
  void heartbeatExtendsTheLeaseOfLongWork() {
    ManualScheduler scheduler = new ManualScheduler();
    Once once = builder().heartbeat(scheduler).build();

    String result = once.execute(key, FP, Codecs.utf8(), a -> {
      assertThat(scheduler.period).isEqualTo(LEASE.dividedBy(3));
      for (int beat = 0; beat < 5; beat++) {
        clock.advance(Duration.ofSeconds(10));
        scheduler.tick();
      }
      // 50 s in, past the original 30 s lease: still ours.
      assertThat(store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE,
          Duration.ofHours(1)))).isInstanceOf(Claim.InProgress.class);
      return "long work done";
    });

    assertThat(result).isEqualTo("long work done");
    assertThat(scheduler.cancelled).isTrue();
  }

  @Test
  void heartbeatNoticesALostLease() {
    ManualScheduler scheduler = new ManualScheduler();
    Once once = builder().heartbeat(scheduler).build();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      clock.advance(LEASE);
      store.claim(new ClaimRequest(key, FP, clock.instant(), LEASE, Duration.ofHours(1)));
      scheduler.tick();
      assertThat(a.isLeaseLost()).isTrue();
      return "zombie";
    })).isInstanceOf(LeaseLostException.class);
  }

  @Test
  void listenerSeesEveryOutcomeAndAThrowingListenerChangesNothing() {
    List<String> events = new CopyOnWriteArrayList<>();
    OnceListener listener = new OnceListener() {
      @Override
      public void onAcquired(IdempotencyKey k, long token, boolean takeover) {
        events.add("acquired");
        throw new IllegalStateException("listener bug");
      }

      @Override
      public void onReplayed(IdempotencyKey k) {
        events.add("replayed");
      }

      @Override
      public void onCompleted(IdempotencyKey k, long token, Duration elapsed) {
        events.add("completed");
      }

      @Override
      public void onMismatch(IdempotencyKey k) {
        events.add("mismatch");
      }

      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        events.add("store:" + operation);
      }
    };
    Once once = builder().listener(listener).build();

    once.execute(key, FP, Codecs.utf8(), a -> "x");
    once.execute(key, FP, Codecs.utf8(), a -> "x");
    assertThatThrownBy(() -> once.execute(key, Fingerprint.of("other"), Codecs.utf8(), a -> "x"));

    assertThat(events).containsExactly("store:claim", "acquired", "store:complete", "completed",
        "store:claim", "replayed", "store:claim", "mismatch");
  }

  @Test
  void composedListenersAreEachToldInOrderEvenWhenOneThrows() {
    List<String> events = new CopyOnWriteArrayList<>();
    OnceListener throwing = new OnceListener() {
      @Override
      public void onAcquired(IdempotencyKey k, long token, boolean takeover) {
        events.add("first:acquired");
        throw new IllegalStateException("listener bug");
      }
    };
    OnceListener second = new OnceListener() {
      @Override
      public void onAcquired(IdempotencyKey k, long token, boolean takeover) {
        events.add("second:acquired");
      }

      @Override
      public void onCompleted(IdempotencyKey k, long token, Duration elapsed) {
        events.add("second:completed");
      }
    };
    Once once = builder().listener(OnceListener.compose(throwing, second)).build();

    assertThat(once.execute(key, FP, Codecs.utf8(), a -> "x")).isEqualTo("x");

    assertThat(events).containsExactly("first:acquired", "second:acquired", "second:completed");
    assertThat(OnceListener.compose(second)).isSameAs(second);
    assertThatThrownBy(() -> OnceListener.compose(second, null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void runReportsWhetherTheActionRan() {
    Once once = builder().build();
    AtomicInteger effects = new AtomicInteger();

    boolean first = once.run(key, FP, a -> effects.incrementAndGet());
    boolean second = once.run(key, FP, a -> effects.incrementAndGet());

    assertThat(first).isTrue();
    assertThat(second).isFalse();
    assertThat(effects).hasValue(1);
  }

  @Test
  void downstreamKeyIsStableAcrossAttemptsAndDistinctPerStep() throws Exception {
    Once once = builder().build();
    List<String> keys = new ArrayList<>();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      keys.add(a.key());
      throw new IOException("retry me");
    })).isInstanceOf(IOException.class);
    once.execute(key, FP, Codecs.utf8(), a -> {
      keys.add(a.key());
      keys.add(a.key("refund"));
      return "ok";
    });

    assertThat(keys.get(0)).isEqualTo(keys.get(1)).startsWith("once-").hasSize(48);
    assertThat(keys.get(2)).isNotEqualTo(keys.get(0)).hasSize(48);
    assertThat(keys.get(0)).matches("once-[A-Za-z0-9_-]{43}");
  }

  @Test
  void aNullArgumentSaysWhatToPassAndStoresNothing() {
    Once once = builder().build();

    assertThatThrownBy(() -> once.execute(key, null, Codecs.utf8(), a -> "x"))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("Fingerprint.of(");
    assertThatThrownBy(() -> once.execute(key, FP, null, a -> "x"))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("Codecs.utf8()");
    assertThat(store.find(key)).isEmpty();
  }

  @Test
  void builderRejectsBadSettings() {
    assertThatThrownBy(() -> builder().lease(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
    assertThatThrownBy(() -> builder().retention(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder().maxPayloadBytes(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Once.builder(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> InProgressPolicy.waitUpTo(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void scheduledMaintenancePurgesAndReaps() {
    Once once = builder().retention(Duration.ofMinutes(1)).build();
    once.execute(key, FP, Codecs.utf8(), a -> "done");
    IdempotencyKey stuck = IdempotencyKey.of("payments.charge", "evt-2");
    store.claim(new ClaimRequest(stuck, FP, clock.instant(), LEASE, Duration.ofHours(1)));
    ManualScheduler scheduler = new ManualScheduler();
    once.maintenance().withBatchSize(1).schedule(scheduler, Duration.ofMinutes(5));

    clock.advance(Duration.ofMinutes(2));
    scheduler.tick();

    assertThat(store.find(key)).isEmpty();
    assertThat(store.find(stuck).orElseThrow().status()).isEqualTo(Status.FAILED);
    assertThat(Maintenance.of(store).withClock(clock).runOnce())
        .isEqualTo(new Maintenance.Report(0, 0));
  }

  /** A scheduler whose ticks the test triggers. */
  static final class ManualScheduler implements Scheduler {
    Runnable task;
    Duration period;
    boolean cancelled;

    @Override
    public Task scheduleAtFixedRate(Runnable task, Duration period) {
      this.task = task;
      this.period = period;
      return () -> cancelled = true;
    }

    void tick() {
      if (!cancelled) {
        task.run();
      }
    }
  }
}
