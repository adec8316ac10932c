package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.PayloadTooLargeException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The store under {@link dev.once.Once}: replays, a reused key, terminal and retryable
 * failures, checkpoints resumed after a takeover, zombies fenced, invalid keys, null arguments,
 * payload limits, and hosts whose clocks disagree (the clock-skew margin).
 */
abstract class ThroughOnceTester extends ConformanceTester {

  ThroughOnceTester(StoreConformanceSuite suite) {
    super(suite);
  }

  @Test
  void duplicateIsReplayedWithoutRunningTheLogic() {
    Once once = once(Once.builder(store));
    IdempotencyKey key = newKey();
    AtomicInteger runs = new AtomicInteger();

    Result<String> first = once.call(key, FP, Codecs.utf8(), a -> "charge-" + runs.incrementAndGet());
    Result<String> second = once.call(key, FP, Codecs.utf8(), a -> "charge-" + runs.incrementAndGet());

    assertThat(first).isEqualTo(new Result<>("charge-1", false, record(key).token()));
    assertThat(second).isEqualTo(new Result<>("charge-1", true, first.token()));
    assertThat(runs).hasValue(1);
  }

  @Test
  void reusedKeyIsRejected() {
    Once once = once(Once.builder(store));
    IdempotencyKey key = newKey();
    once.execute(key, FP, Codecs.utf8(), a -> "first");

    assertThatThrownBy(() -> once.execute(key, OTHER_FP, Codecs.utf8(), a -> "second"))
        .isInstanceOf(KeyReusedException.class);
  }

  @Test
  void terminalFailureIsReplayedAsReplayedFailureException() {
    Once once = once(Once.builder(store)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalStateException.class)));
    IdempotencyKey key = newKey();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      throw new IllegalStateException("insufficient funds");
    })).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "must not run"))
        .isInstanceOfSatisfying(ReplayedFailureException.class, e -> {
          assertThat(e.failureType()).isEqualTo(IllegalStateException.class.getName());
          assertThat(e.failureMessage()).isEqualTo("insufficient funds");
        });
  }

  @Test
  void retryableFailureRunsAgainWithTheNextToken() throws Exception {
    Once once = once(Once.builder(store));
    IdempotencyKey key = newKey();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      throw new java.io.IOException("gateway down");
    })).isInstanceOf(java.io.IOException.class);
    Result<String> retry = once.call(key, FP, Codecs.utf8(), a -> "attempt " + a.attemptNumber());

    assertThat(retry).isEqualTo(new Result<>("attempt 2", false, record(key).token()));
    assertThat(record(key).attempts()).isEqualTo(2);
  }

  @Test
  void checkpointsResumeAfterTakeover() {
    Once once = once(Once.builder(store));
    IdempotencyKey key = newKey();
    // First worker checkpoints, then "crashes": its claim stays IN_PROGRESS.
    Claim.Acquired crashed = acquire(key);
    store.checkpoint(key, crashed.token(), Checkpoint.of("debited", "tx-77".getBytes(StandardCharsets.UTF_8)),
        clock.instant());
    clock.set(crashed.leaseUntil());

    String result = once.execute(key, FP, Codecs.utf8(), a -> {
      assertThat(a.takeover()).isTrue();
      return a.lastCheckpoint().map(c -> "resumed after " + c.name()).orElse("from scratch");
    });

    assertThat(result).isEqualTo("resumed after debited");
  }

  @Test
  void zombieAttemptIsFencedOnCheckpointAndCompletion() {
    Once once = once(Once.builder(store));
    IdempotencyKey key = newKey();
    AtomicLong zombieToken = new AtomicLong();

    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> {
      zombieToken.set(a.token());
      clock.set(a.leaseUntil());
      // A successor takes over while this attempt is paused.
      assertThat(claim(key)).isInstanceOf(Claim.Acquired.class);
      try {
        a.checkpoint("late", new byte[1]);
      } catch (LeaseLostException e) {
        assertThat(a.isLeaseLost()).isTrue();
      }
      return "zombie result";
    })).isInstanceOf(LeaseLostException.class);
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(r.token()).isEqualTo(zombieToken.get() + 1);
    assertThat(r.checkpoint()).isNull();
  }

  @Test
  void invalidKeysAreRejectedBeforeTheStore() {
    assertThatThrownBy(() -> IdempotencyKey.of(scope, "")).isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> IdempotencyKey.of(scope, "x".repeat(256)))
        .isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> IdempotencyKey.of(scope, "bad\nkey"))
        .isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> IdempotencyKey.of(scope, null)).isInstanceOf(InvalidKeyException.class);
    assertThat(store.find(IdempotencyKey.of(scope, "x".repeat(255)))).isEmpty();
  }

  @Test
  void anOversizedOutcomeFinishesTheKeyWithoutItsValueAndTheWorkNeverRunsAgain() {
    Once once = once(Once.builder(store).maxPayloadBytes(16));
    IdempotencyKey key = newKey();
    AtomicInteger runs = new AtomicInteger();

    assertThat(once.execute(key, FP, Codecs.utf8(), a -> "x".repeat(16 + runs.incrementAndGet())))
        .isEqualTo("x".repeat(17));
    IdempotencyRecord r = record(key);
    assertThat(r.status()).isEqualTo(Status.COMPLETED);
    assertThat(r.outcome().isNotStored()).isTrue();
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), a -> "y" + runs.incrementAndGet()))
        .isInstanceOf(OutcomeNotStoredException.class)
        .hasMessageContaining("PayloadTooLargeException");
    assertThat(runs).hasValue(1);
  }

  @Test
  void oversizedCheckpointIsNotStored() {
    Once once = once(Once.builder(store).maxPayloadBytes(8));
    IdempotencyKey key = newKey();

    once.execute(key, FP, Codecs.utf8(), a -> {
      a.checkpoint("small", new byte[8]);
      assertThatThrownBy(() -> a.checkpoint("big", new byte[9]))
          .isInstanceOf(PayloadTooLargeException.class);
      assertThat(record(key).checkpoint()).isEqualTo(Checkpoint.of("small", new byte[8]));
      return "ok";
    });
  }

  @Test
  void nullArgumentsStoreNothing() {
    Once once = once(Once.builder(store));
    IdempotencyKey key = newKey();

    assertThatThrownBy(() -> once.execute(key, null, Codecs.utf8(), a -> "x"))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> once.execute(key, FP, null, a -> "x"))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> once.execute(key, FP, Codecs.utf8(), null))
        .isInstanceOf(NullPointerException.class);
    assertThat(store.find(key)).isEmpty();
  }

  @Test
  void aHostWhoseClockRunsAheadCannotTakeOverBeforeTheHoldersLeaseEnds() throws Exception {
    assertThat(raceWithASkewedHost(Duration.ofSeconds(10)))
        .as("effects with a margin covering the skew").isEqualTo(1);
  }

  @Test
  void withoutAMarginAHostWhoseClockRunsAheadTakesOverEarly() throws Exception {
    // The hazard the margin exists for, shown on the real store: both run the effect.
    assertThat(raceWithASkewedHost(Duration.ZERO)).as("effects without a margin").isEqualTo(2);
  }

  /**
   * A holder runs the work on one thread; on another, a host whose clock runs 5 s ahead claims
   * the same key when the holder has 1 s of its lease left. Returns how often the effect ran.
   */
  private int raceWithASkewedHost(Duration margin) throws Exception {
    Duration skew = Duration.ofSeconds(5);
    Once holder = Once.builder(store).clock(clock).lease(LEASE).retention(RETENTION)
        .clockSkewMargin(margin).build();
    Once ahead = Once.builder(store).clock(java.time.Clock.offset(clock, skew)).lease(LEASE)
        .retention(RETENTION).clockSkewMargin(margin).build();
    IdempotencyKey key = newKey();
    AtomicInteger effects = new AtomicInteger();
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch tried = new CountDownLatch(1);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      Future<String> first = threads.submit(() -> holder.execute(key, FP, Codecs.utf8(), a -> {
        effects.incrementAndGet();
        inside.countDown();
        assertThat(tried.await(30, TimeUnit.SECONDS)).isTrue();
        return "holder";
      }));
      assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
      clock.advance(LEASE.minusSeconds(1));
      Future<String> second = threads.submit(() -> {
        try {
          return ahead.execute(key, FP, Codecs.utf8(), a -> {
            effects.incrementAndGet();
            return "ahead";
          });
        } catch (RequestInProgressException e) {
          return "in progress";
        } finally {
          tried.countDown();
        }
      });
      String secondAnswer = second.get(30, TimeUnit.SECONDS);
      try {
        first.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(LeaseLostException.class);
      }
      if (effects.get() == 1) {
        assertThat(secondAnswer).isEqualTo("in progress");
      }
      return effects.get();
    } finally {
      threads.shutdownNow();
    }
  }
}
