package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.RACERS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Real threads racing on one key: exactly one claim acquires a new key or takes over a passed
 * lease, claims after completion all replay, Once runs the logic once, one writer of a token wins.
 * Each race runs on platform threads and on virtual threads ({@link Racers}; JDK 21+).
 */
abstract class RacesTester extends ConformanceTester {

  RacesTester(StoreConformanceSuite suite) {
    super(suite);
  }

  private <T> List<T> race(Racers racers, int threads, Callable<T> task) throws Exception {
    ExecutorService pool = racers.pool(threads);
    try {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<T>> futures = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        futures.add(pool.submit(() -> {
          ready.countDown();
          go.await();
          return task.call();
        }));
      }
      ready.await();
      go.countDown();
      List<T> results = new ArrayList<>();
      for (Future<T> f : futures) {
        results.add(f.get(60, TimeUnit.SECONDS));
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void exactlyOneOfManyClaimsOnANewKeyIsAcquired(Racers racers) throws Exception {
    for (int round = 0; round < 10; round++) {
      IdempotencyKey key = newKey();
      List<Claim> claims = race(racers, RACERS, () -> claim(key));

      assertThat(claims).filteredOn(c -> c instanceof Claim.Acquired).hasSize(1);
      assertThat(claims).filteredOn(c -> c instanceof Claim.InProgress).hasSize(RACERS - 1);
      long winner = claims.stream().filter(c -> c instanceof Claim.Acquired)
          .mapToLong(c -> ((Claim.Acquired) c).token()).findFirst().orElseThrow();
      assertThat(record(key).token()).isEqualTo(winner);
    }
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void exactlyOneOfManyClaimsTakesAnExpiredLeaseOver(Racers racers) throws Exception {
    for (int round = 0; round < 5; round++) {
      IdempotencyKey key = newKey();
      Instant start = clock.instant();
      Claim.Acquired first = acquire(key);
      clock.set(first.leaseUntil());
      List<Claim> claims = race(racers, RACERS, () -> claim(key));

      assertThat(claims).filteredOn(c -> c instanceof Claim.Acquired).hasSize(1)
          .allSatisfy(c -> assertThat(((Claim.Acquired) c).token()).isEqualTo(first.token() + 1));
      assertThat(claims).filteredOn(c -> c instanceof Claim.InProgress).hasSize(RACERS - 1);
      assertThat(record(key).token()).isEqualTo(first.token() + 1);
      clock.set(start);
    }
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void claimsAfterCompletionAllReplay(Racers racers) throws Exception {
    IdempotencyKey key = newKey();
    long token = acquire(key).token();
    complete(key, token, text("done"));

    List<Claim> claims = race(racers, RACERS, () -> claim(key));

    assertThat(claims).allSatisfy(c -> assertThat(c).isEqualTo(new Claim.Replay(text("done"), token)));
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void onceRunsTheLogicExactlyOnceUnderARace(Racers racers) throws Exception {
    Once once = once(Once.builder(store));
    for (int round = 0; round < 5; round++) {
      IdempotencyKey key = newKey();
      AtomicInteger executions = new AtomicInteger();
      List<String> answers = race(racers, RACERS, () -> {
        try {
          Result<String> r = once.call(key, FP, Codecs.utf8(), a -> {
            executions.incrementAndGet();
            return "charged";
          });
          return r.replayed() ? "replayed" : "ran";
        } catch (RequestInProgressException e) {
          return "in-progress";
        }
      });

      assertThat(executions).hasValue(1);
      assertThat(answers).containsOnlyOnce("ran");
      assertThat(claim(key)).isEqualTo(new Claim.Replay(
          Outcome.success(Codecs.utf8().mediaType(), "charged".getBytes(StandardCharsets.UTF_8)),
          record(key).token()));
    }
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void racingWritersOfOneTokenLeaveOneConsistentOutcome(Racers racers) throws Exception {
    IdempotencyKey key = newKey();
    long token = acquire(key).token();
    AtomicInteger n = new AtomicInteger();

    List<Boolean> won = race(racers, RACERS, () -> {
      try {
        complete(key, token, text("writer-" + n.incrementAndGet()));
        return true;
      } catch (LeaseLostException e) {
        return false;
      }
    });

    assertThat(won).containsOnlyOnce(true);
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
  }
}
