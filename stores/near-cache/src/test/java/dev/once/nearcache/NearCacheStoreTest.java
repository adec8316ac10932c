package dev.once.nearcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.testkit.ManualClock;
import dev.once.testkit.Racers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the near cache adds, on the in-memory store with every store call counted: which answers
 * come from memory, exactly until when, and what is never cached.
 */
class NearCacheStoreTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(24);
  private static final Duration NANO = Duration.ofNanos(1);
  private static final Fingerprint FP = Fingerprint.of("request-A");
  private static final Fingerprint OTHER_FP = Fingerprint.of("request-B");

  private final InMemoryStore records = new InMemoryStore();
  private final CountingStore counted = new CountingStore(records);
  private final ManualClock clock = new ManualClock();
  private final String scope = "near-cache." + UUID.randomUUID().toString().substring(0, 8);
  private final AtomicInteger keys = new AtomicInteger();
  private NearCacheStore cache = NearCacheStore.wrap(counted).build();

  @AfterEach
  void close() {
    cache.close();
  }

  private IdempotencyKey newKey() {
    return IdempotencyKey.of(scope, "key-" + keys.incrementAndGet());
  }

  private ClaimRequest request(IdempotencyKey key, Fingerprint fingerprint) {
    return new ClaimRequest(key, fingerprint, clock.instant(), LEASE, RETENTION);
  }

  private static Outcome text(String s) {
    return Outcome.success("text/plain", s.getBytes(StandardCharsets.UTF_8));
  }

  /** Claims {@code key} through {@code store} and completes it with {@code outcome}. */
  private long completed(IdempotencyStore store, IdempotencyKey key, Outcome outcome) {
    long token = ((Claim.Acquired) store.claim(request(key, FP))).token();
    store.complete(key, token, outcome, clock.instant(), RETENTION);
    return token;
  }

  private Once once(IdempotencyStore store) {
    return Once.builder(store).clock(clock).lease(LEASE).retention(RETENTION)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
  }

  // --- answers from memory ---------------------------------------------------------------------

  @Test
  void aReplayOfAKeyCompletedThroughTheCacheIsAnsweredWithoutAStoreCall() {
    IdempotencyKey key = newKey();
    long token = completed(cache, key, text("charged"));
    int before = counted.reads();

    for (int i = 0; i < 100; i++) {
      assertThat(cache.claim(request(key, FP))).isEqualTo(new Claim.Replay(text("charged"), token));
      clock.advance(Duration.ofMinutes(1));
    }

    assertThat(counted.reads()).as("store reads for 100 replays").isEqualTo(before);
    assertThat(records.find(key).orElseThrow().status()).isEqualTo(dev.once.spi.Status.COMPLETED);
  }

  @Test
  void onceReplaysValuesFailuresAndUnstoredResultsFromMemory() {
    Once once = once(cache);
    IdempotencyKey value = newKey();
    IdempotencyKey failure = newKey();
    IdempotencyKey tooLarge = newKey();
    AtomicInteger runs = new AtomicInteger();
    Result<String> first = once.call(value, FP, Codecs.utf8(), a -> "v" + runs.incrementAndGet());
    assertThatThrownBy(() -> once.execute(failure, FP, Codecs.utf8(), a -> {
      runs.incrementAndGet();
      throw new IllegalArgumentException("card declined");
    })).isInstanceOf(IllegalArgumentException.class);
    Once small = Once.builder(cache).clock(clock).lease(LEASE).retention(RETENTION)
        .maxPayloadBytes(4).build();
    small.execute(tooLarge, FP, Codecs.utf8(), a -> "more than four bytes " + runs.incrementAndGet());
    int before = counted.reads();

    Result<String> again = once.call(value, FP, Codecs.utf8(), a -> "v" + runs.incrementAndGet());
    assertThatThrownBy(() -> once.execute(failure, FP, Codecs.utf8(), a -> "never"))
        .isInstanceOfSatisfying(ReplayedFailureException.class,
            e -> assertThat(e.failureMessage()).isEqualTo("card declined"));
    assertThatThrownBy(() -> once.execute(tooLarge, FP, Codecs.utf8(), a -> "never"))
        .isInstanceOf(OutcomeNotStoredException.class);
    assertThatThrownBy(() -> once.execute(value, OTHER_FP, Codecs.utf8(), a -> "never"))
        .isInstanceOf(KeyReusedException.class);

    assertThat(again).isEqualTo(new Result<>("v1", true, first.token()));
    assertThat(runs).hasValue(3);
    assertThat(counted.reads()).as("store reads for four duplicates").isEqualTo(before);
  }

  @Test
  void aMismatchIsAnsweredFromMemoryAndLeavesTheRecordAlone() {
    IdempotencyKey key = newKey();
    completed(cache, key, text("done"));
    var stored = records.find(key);
    int before = counted.reads();

    assertThat(cache.claim(request(key, OTHER_FP))).isEqualTo(new Claim.Mismatch());

    assertThat(counted.reads()).isEqualTo(before);
    assertThat(records.find(key)).isEqualTo(stored);
    assertThat(records.claim(request(key, OTHER_FP))).as("what the store itself answers")
        .isEqualTo(new Claim.Mismatch());
  }

  @Test
  void anEntryAnswersUntilTheInstantBeforeItsRecordExpiresAndNeverAtIt() {
    IdempotencyKey key = newKey();
    clock.advance(Duration.ofNanos(123_456_789)); // an instant with nanoseconds in it
    long token = completed(cache, key, text("done"));
    Instant expiresAt = records.find(key).orElseThrow().expiresAt();
    assertThat(expiresAt).isEqualTo(clock.instant().plus(RETENTION));

    clock.set(expiresAt.minus(Duration.ofNanos(1_000))); // the microsecond before
    assertThat(cache.claim(request(key, FP))).isEqualTo(new Claim.Replay(text("done"), token));
    assertThat(counted.claims).as("answered from memory").hasValue(1);

    clock.set(expiresAt);
    Claim atExpiry = cache.claim(request(key, FP));

    assertThat(counted.claims).as("the store decides at the expiry").hasValue(2);
    assertThat(atExpiry).isInstanceOf(Claim.Acquired.class);
    assertThat(((Claim.Acquired) atExpiry).token()).isEqualTo(token + 1);
    assertThat(cache.claim(request(key, FP))).as("the new claim, from the store")
        .isInstanceOf(Claim.InProgress.class);
    assertThat(counted.claims).hasValue(3);
  }

  @Test
  void anEntryIsDroppedFromMemoryOnceTheCallersTimePassesItsExpiry() {
    IdempotencyKey key = newKey();
    completed(cache, key, text("done"));
    Instant expiresAt = records.find(key).orElseThrow().expiresAt();
    IdempotencyKey other = newKey();

    clock.set(expiresAt.minusMillis(2));
    cache.claim(request(other, FP)); // any caller's time moves the cache's clock
    assertThat(cache.cachedRecords()).as("before its expiry").isEqualTo(1);
    // Answers stop exactly at the expiry (above); memory is freed by Caffeine's timer wheel,
    // whose buckets span about a second.
    clock.set(expiresAt.plusSeconds(2));
    cache.claim(request(other, FP));

    assertThat(cache.cachedRecords()).as("after its expiry, by the callers' clock").isZero();
  }

  @Test
  void aReplayLearnedFromTheStoreCostsOneReadThenNone() {
    IdempotencyKey key = newKey();
    long token = completed(records, key, text("done elsewhere")); // another instance completed it
    clock.advance(Duration.ofMinutes(5));

    Claim first = cache.claim(request(key, FP));
    Claim second = cache.claim(request(key, FP));
    Claim mismatch = cache.claim(request(key, OTHER_FP));

    assertThat(first).isEqualTo(new Claim.Replay(text("done elsewhere"), token));
    assertThat(second).isEqualTo(first);
    assertThat(mismatch).isEqualTo(new Claim.Mismatch());
    assertThat(counted.claims).hasValue(1);
    assertThat(counted.finds).as("one read of the record, for its expiry").hasValue(1);
    Instant expiresAt = records.find(key).orElseThrow().expiresAt();
    clock.set(expiresAt.minus(NANO));
    assertThat(cache.claim(request(key, FP))).isEqualTo(first);
    clock.set(expiresAt);
    assertThat(cache.claim(request(key, FP))).isInstanceOf(Claim.Acquired.class);
    assertThat(counted.claims).hasValue(2);
  }

  @Test
  void withoutLearningFromReplaysTheStoreIsNeverReadForAnExpiry() {
    cache.close();
    cache = NearCacheStore.wrap(counted).learnFromReplays(false).build();
    IdempotencyKey elsewhere = newKey();
    completed(records, elsewhere, text("elsewhere"));
    IdempotencyKey here = newKey();
    completed(cache, here, text("here"));

    for (int i = 0; i < 3; i++) {
      assertThat(cache.claim(request(elsewhere, FP))).isInstanceOf(Claim.Replay.class);
      assertThat(cache.claim(request(here, FP))).isInstanceOf(Claim.Replay.class);
    }

    assertThat(counted.finds).hasValue(0);
    assertThat(counted.claims).as("1 claim of here, 3 replays of elsewhere").hasValue(4);
  }

  // --- never cached ----------------------------------------------------------------------------

  @Test
  void inProgressAndRetryableFailuresAreNeverCached() {
    IdempotencyKey key = newKey();
    Claim.Acquired first = (Claim.Acquired) cache.claim(request(key, FP));

    for (int i = 0; i < 3; i++) {
      assertThat(cache.claim(request(key, FP))).isEqualTo(new Claim.InProgress(first.leaseUntil()));
    }
    assertThat(counted.claims).as("every duplicate asked the store").hasValue(4);
    cache.fail(key, first.token(), "gateway timeout", clock.instant(), RETENTION);
    Claim retry = cache.claim(request(key, FP));

    assertThat(retry).isInstanceOf(Claim.Acquired.class);
    assertThat(((Claim.Acquired) retry).token()).isEqualTo(first.token() + 1);
    assertThat(counted.claims).hasValue(5);
    assertThat(counted.finds).hasValue(0);
    assertThat(cache.cachedRecords()).isZero();
  }

  @Test
  void aZombiesRefusedCompletionTeachesNothing() {
    IdempotencyKey key = newKey();
    Claim.Acquired zombie = (Claim.Acquired) cache.claim(request(key, FP));
    clock.set(zombie.leaseUntil());
    Claim.Acquired successor = (Claim.Acquired) records.claim(request(key, FP));

    assertThatThrownBy(() -> cache.complete(key, zombie.token(), text("zombie"), clock.instant(),
        RETENTION)).isInstanceOf(LeaseLostException.class);

    assertThat(cache.cachedRecords()).isZero();
    assertThat(cache.claim(request(key, FP)))
        .isEqualTo(new Claim.InProgress(successor.leaseUntil()));
  }

  // --- never longer than the record lives ------------------------------------------------------

  @Test
  void aCompletionRepeatedLaterAfterItsAnswerWasLostKeepsTheFirstExpiry() {
    IdempotencyKey key = newKey();
    long token = ((Claim.Acquired) cache.claim(request(key, FP))).token();
    Instant firstTry = clock.instant();
    counted.loseNextCompletionAnswer();
    assertThatThrownBy(() -> cache.complete(key, token, text("done"), firstTry, RETENTION))
        .isInstanceOf(StoreUnavailableException.class);
    clock.advance(Duration.ofMinutes(10));

    // The repeat (as Once sends it: a fresh clock reading) is acknowledged, changing nothing.
    cache.complete(key, token, text("done"), clock.instant(), RETENTION);

    Instant expiresAt = records.find(key).orElseThrow().expiresAt();
    assertThat(expiresAt).isEqualTo(firstTry.plus(RETENTION));
    clock.set(expiresAt.minus(NANO));
    assertThat(cache.claim(request(key, FP))).isEqualTo(new Claim.Replay(text("done"), token));
    int before = counted.claims.get();
    clock.set(expiresAt);
    assertThat(cache.claim(request(key, FP))).as("the key behaves as new at the stored expiry")
        .isInstanceOf(Claim.Acquired.class);
    assertThat(counted.claims).hasValue(before + 1);
  }

  @Test
  void aPurgeStopsAnswersForEveryRecordItMayHaveDeleted() {
    IdempotencyKey key = newKey();
    completed(cache, key, text("done"));
    Instant expiresAt = records.find(key).orElseThrow().expiresAt();

    // A purge by a clock far ahead deletes the record before the callers' clocks reach its expiry.
    while (cache.purgeExpired(expiresAt, 100) > 0) {
      // drain
    }
    assertThat(records.find(key)).isEmpty();
    Claim afterPurge = cache.claim(request(key, FP));

    assertThat(afterPurge).as("as the store answers: the key is new").isInstanceOf(Claim.Acquired.class);
  }

  @Test
  void aRecordDeletedByHandIsReplayedUntilInvalidated() {
    IdempotencyKey key = newKey();
    long token = completed(cache, key, text("done"));

    records.clear(); // outside the SPI, as an operator's DELETE

    assertThat(cache.claim(request(key, FP))).as("the documented hazard")
        .isEqualTo(new Claim.Replay(text("done"), token));
    cache.invalidate(key);
    assertThat(cache.claim(request(key, FP))).isInstanceOf(Claim.Acquired.class);
  }

  @Test
  void aRecordReadBeforeAnInvalidationIsNotKeptAfterIt() throws Exception {
    IdempotencyKey key = newKey();
    completed(records, key, text("done"));
    CountDownLatch reading = new CountDownLatch(1);
    CountDownLatch invalidated = new CountDownLatch(1);
    counted.beforeFind(k -> {
      reading.countDown();
      try {
        assertThat(invalidated.await(30, TimeUnit.SECONDS)).isTrue();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try {
      // The replay reads the record for its expiry; the read is held until after invalidate().
      Future<Claim> replay = thread.submit(() -> cache.claim(request(key, FP)));
      assertThat(reading.await(30, TimeUnit.SECONDS)).isTrue();
      cache.invalidate(key);
      invalidated.countDown();
      assertThat(replay.get(30, TimeUnit.SECONDS)).isInstanceOf(Claim.Replay.class);
    } finally {
      thread.shutdownNow();
    }
    counted.beforeFind(k -> {});

    assertThat(cache.cachedRecords()).isZero();
    int before = counted.claims.get();
    cache.claim(request(key, FP));
    assertThat(counted.claims).as("the next replay asks the store").hasValue(before + 1);
  }

  // --- bounds ----------------------------------------------------------------------------------

  @Test
  void theSizeBoundEvictsAndAnEvictedKeyIsAskedOfTheStoreAgain() {
    cache.close();
    cache = NearCacheStore.wrap(counted).maximumSize(10).build();
    List<IdempotencyKey> done = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      IdempotencyKey key = newKey();
      completed(cache, key, text("done " + i));
      done.add(key);
    }

    assertThat(cache.cachedRecords()).isLessThanOrEqualTo(10);
    int before = counted.claims.get();
    for (IdempotencyKey key : done) {
      assertThat(cache.claim(request(key, FP))).isInstanceOf(Claim.Replay.class);
    }
    assertThat(counted.claims.get() - before).as("replays that had to ask the store")
        .isGreaterThanOrEqualTo(190);
    assertThat(cache.cachedRecords()).isLessThanOrEqualTo(10);
  }

  @Test
  void theByteBoundCountsOutcomeBodies() {
    cache.close();
    cache = NearCacheStore.wrap(counted).maximumBytes(64 * 1024).build();
    for (int i = 0; i < 100; i++) {
      completed(cache, newKey(), Outcome.success("application/octet-stream", new byte[8 * 1024]));
    }

    assertThat(cache.cachedRecords()).isBetween(1L, 8L);
  }

  @Test
  void theBuilderRefusesBadBounds() {
    assertThatThrownBy(() -> NearCacheStore.wrap(records).maximumSize(0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maximumSize");
    assertThatThrownBy(() -> NearCacheStore.wrap(records).maximumBytes(-1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maximumBytes");
    assertThatThrownBy(() -> NearCacheStore.wrap(records).maximumSize(10).maximumBytes(10).build())
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> NearCacheStore.wrap(null)).isInstanceOf(NullPointerException.class);
  }

  // --- batches ---------------------------------------------------------------------------------

  @Test
  void aBatchClaimAnswersWhatItCanFromMemoryAndSendsTheRestInOneCall() {
    IdempotencyKey done = newKey();
    long token = completed(cache, done, text("done"));
    IdempotencyKey fresh = newKey();
    IdempotencyKey running = newKey();
    Claim.Acquired runningClaim = (Claim.Acquired) cache.claim(request(running, FP));
    int claimsBefore = counted.claims.get();

    List<Claim> claims = cache.claimAll(List.of(request(done, FP), request(fresh, FP),
        request(done, OTHER_FP), request(running, FP), request(fresh, FP), request(done, FP)));

    assertThat(claims).hasSize(6);
    assertThat(claims.get(0)).isEqualTo(new Claim.Replay(text("done"), token));
    assertThat(claims.get(1)).isInstanceOf(Claim.Acquired.class);
    assertThat(claims.get(2)).isEqualTo(new Claim.Mismatch());
    assertThat(claims.get(3)).isEqualTo(new Claim.InProgress(runningClaim.leaseUntil()));
    assertThat(claims.get(4)).as("sees the first request's claim").isInstanceOf(Claim.InProgress.class);
    assertThat(claims.get(5)).isEqualTo(claims.get(0));
    assertThat(counted.claimAlls).hasValue(1);
    assertThat(counted.claimAllRequests).as("only the misses went to the store").hasValue(3);
    assertThat(counted.claims).hasValue(claimsBefore);

    assertThat(cache.claimAll(List.of(request(done, FP), request(done, OTHER_FP))))
        .containsExactly(new Claim.Replay(text("done"), token), new Claim.Mismatch());
    assertThat(counted.claimAlls).as("a batch of hits calls no store").hasValue(1);
  }

  /**
   * With coalesced store calls, a caller whose answer the near cache holds (a replay) used to
   * queue behind the other callers' store calls like any claim: here behind one that does not
   * end. It now asks the cache before it queues, and is answered at once.
   */
  @Test
  void aCoalescedReplayFromMemoryDoesNotQueueBehindACallInFlight() throws Exception {
    Once once = Once.builder(cache).clock(clock).lease(LEASE).retention(RETENTION)
        .coalesceStoreCalls(1).build();
    IdempotencyKey done = newKey();
    assertThat(once.execute(done, FP, Codecs.utf8(), a -> "done")).isEqualTo("done");
    IdempotencyKey stuckKey = newKey();
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    counted.beforeClaim(k -> {
      if (k.equals(stuckKey)) {
        entered.countDown();
        try {
          release.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    ExecutorService callers = Executors.newCachedThreadPool();
    try {
      Future<String> stuck = callers.submit(() ->
          once.execute(stuckKey, FP, Codecs.utf8(), a -> "stuck"));
      assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
      int claimsBefore = counted.claims.get();

      // The demand is 2, above 1: a claim that went to the store would queue behind the stuck one.
      Future<String> replay = callers.submit(() ->
          once.execute(done, FP, Codecs.utf8(), a -> "never"));

      assertThat(replay.get(10, TimeUnit.SECONDS)).isEqualTo("done");
      assertThat(stuck).isNotDone();
      assertThat(counted.claims).hasValue(claimsBefore);
      release.countDown();
      assertThat(stuck.get(30, TimeUnit.SECONDS)).isEqualTo("stuck");
    } finally {
      release.countDown();
      callers.shutdownNow();
    }
  }

  /**
   * A batch claim with a lock wait (a coalesced claim's) answers its hits from memory and sends
   * its misses with the same lock wait: a decorator that dropped it would make the store wait.
   */
  @Test
  void aBatchClaimsLockWaitReachesTheStoreWithItsMisses() {
    IdempotencyKey done = newKey();
    long token = completed(cache, done, text("done"));
    IdempotencyKey fresh = newKey();

    List<Claim> claims = cache.claimAll(List.of(request(done, FP), request(fresh, FP)),
        Duration.ofMillis(50));

    assertThat(claims.get(0)).isEqualTo(new Claim.Replay(text("done"), token));
    assertThat(claims.get(1)).isInstanceOf(Claim.Acquired.class);
    assertThat(counted.claimAllRequests).as("only the miss went to the store").hasValue(1);
    assertThat(counted.lastLockWait).isEqualTo(Duration.ofMillis(50));
  }

  /** Once, left to coalesce as the store suggests, hears the store's suggestion through it. */
  @Test
  void suggestsTheCoalescingItsStoreSuggests() {
    for (int suggested : new int[] {-1, 0, 8}) {
      counted.suggestedCoalescing = suggested;
      assertThat(cache.defaultCoalescing()).isEqualTo(suggested);
    }
  }

  @Test
  void aBatchCompletionsLockWaitReachesTheStoreAndWhatItStoresIsLearned() {
    IdempotencyKey key = newKey();
    long token = ((Claim.Acquired) cache.claim(request(key, FP))).token();

    assertThat(cache.completeAll(List.of(new Completion(key, token, text("done"))),
        clock.instant(), RETENTION, Duration.ofMillis(50))).isEmpty();

    assertThat(counted.lastCompletionLockWait).isEqualTo(Duration.ofMillis(50));
    int claims = counted.claims.get();
    assertThat(cache.claim(request(key, FP))).isEqualTo(new Claim.Replay(text("done"), token));
    assertThat(counted.claims).as("answered from memory").hasValue(claims);
  }

  @Test
  void inABatchAKeyOnceSentToTheStoreIsDecidedThereForTheRestOfTheBatch() {
    IdempotencyKey key = newKey();
    completed(cache, key, text("done"));
    Instant expiresAt = records.find(key).orElseThrow().expiresAt();
    // Requests with different clocks: the first finds the record expired and claims the key anew;
    // the second, from a clock behind, must see that claim as the store would, not the old record.
    List<ClaimRequest> batch = List.of(
        new ClaimRequest(key, OTHER_FP, expiresAt, LEASE, RETENTION),
        new ClaimRequest(key, FP, expiresAt.minusSeconds(1), LEASE, RETENTION));

    List<Claim> claims = cache.claimAll(batch);

    assertThat(claims.get(0)).isInstanceOf(Claim.Acquired.class);
    assertThat(claims.get(1)).isEqualTo(new Claim.Mismatch());
  }

  @Test
  void aBatchCompletionTeachesTheRecordsItStoredAndNotTheLostOnes() {
    IdempotencyKey a = newKey();
    IdempotencyKey b = newKey();
    IdempotencyKey lost = newKey();
    List<Claim> claims = cache.claimAll(List.of(request(a, FP), request(b, OTHER_FP),
        request(lost, FP)));
    long[] tokens = claims.stream().mapToLong(c -> ((Claim.Acquired) c).token()).toArray();
    clock.advance(LEASE);
    records.claim(request(lost, FP)); // taken over elsewhere

    var refused = cache.completeAll(List.of(new Completion(a, tokens[0], text("a")),
        new Completion(b, tokens[1], text("b")), new Completion(lost, tokens[2], text("zombie"))),
        clock.instant(), RETENTION);

    assertThat(refused).containsExactly(lost);
    int before = counted.reads();
    assertThat(cache.claim(request(a, FP))).isEqualTo(new Claim.Replay(text("a"), tokens[0]));
    assertThat(cache.claim(request(b, OTHER_FP))).isEqualTo(new Claim.Replay(text("b"), tokens[1]));
    assertThat(cache.claim(request(b, FP))).isEqualTo(new Claim.Mismatch());
    assertThat(counted.reads()).isEqualTo(before);
    assertThat(cache.claim(request(lost, FP))).isInstanceOf(Claim.InProgress.class);
    assertThat(counted.reads()).isEqualTo(before + 1);
  }

  // --- concurrency -----------------------------------------------------------------------------

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void manyThreadsReplayingOneKeyAllGetTheStoredAnswerWithoutAskingTheStore(Racers racers)
      throws Exception {
    IdempotencyKey key = newKey();
    Once once = once(cache);
    AtomicInteger runs = new AtomicInteger();
    int threads = 16;
    ExecutorService pool = racers.pool(threads);
    try {
      // Round one: racing first calls, one runs. Round two: racing replays, all from memory.
      for (int round = 0; round < 2; round++) {
        int readsBefore = counted.reads();
        CountDownLatch go = new CountDownLatch(1);
        List<Future<List<String>>> answers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          answers.add(pool.submit(() -> {
            assertThat(go.await(30, TimeUnit.SECONDS)).isTrue();
            List<String> seen = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
              try {
                seen.add(once.execute(key, FP, Codecs.utf8(), a -> "ran " + runs.incrementAndGet()));
              } catch (dev.once.RequestInProgressException e) {
                seen.add("in progress");
              }
            }
            return seen;
          }));
        }
        go.countDown();
        for (Future<List<String>> f : answers) {
          assertThat(f.get(60, TimeUnit.SECONDS)).allMatch(s -> s.equals("ran 1")
              || s.equals("in progress"));
        }
        if (round == 1) {
          for (Future<List<String>> f : answers) {
            assertThat(f.get()).containsOnly("ran 1");
          }
          assertThat(counted.reads()).as("store reads for %s replays", threads * 500)
              .isEqualTo(readsBefore);
        }
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(runs).hasValue(1);
  }
}
