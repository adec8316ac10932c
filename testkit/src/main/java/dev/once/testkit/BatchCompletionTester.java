package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.PayloadTooLargeException;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Batch completion ({@code completeAll}): every outcome stored as {@code complete} stores it,
 * only the completions whose lease was lost reported, a batch refused whole before anything is
 * stored (a key twice, an oversized outcome), and racing batches of one token.
 */
abstract class BatchCompletionTester extends ConformanceTester {

  BatchCompletionTester(StoreConformanceSuite suite) {
    super(suite);
  }

  private Set<IdempotencyKey> completeAll(Completion... completions) {
    return store.completeAll(List.of(completions), clock.instant(), RETENTION);
  }

  @Test
  void storesEveryOutcomeAsCompleteDoes() {
    storesEveryOutcomeAsCompleteDoes(this::completeAll);
  }

  /** With no row held by another transaction, a lock wait changes nothing. */
  @Test
  void storesEveryOutcomeAsCompleteDoesWithALockWait() {
    storesEveryOutcomeAsCompleteDoes(completions -> store.completeAll(List.of(completions),
        clock.instant(), RETENTION, Duration.ofMillis(50)));
  }

  private void storesEveryOutcomeAsCompleteDoes(
      java.util.function.Function<Completion[], Set<IdempotencyKey>> completeAll) {
    IdempotencyKey plain = newKey();
    IdempotencyKey withCheckpoint = newKey();
    IdempotencyKey failed = newKey();
    List<Claim> claims = store.claimAll(List.of(request(plain, FP), request(withCheckpoint, FP),
        request(failed, FP)));
    long[] tokens = claims.stream().mapToLong(c -> ((Claim.Acquired) c).token()).toArray();
    Checkpoint step = Checkpoint.of("debited", new byte[] {7});
    store.checkpoint(withCheckpoint, tokens[1], step, clock.instant());
    IdempotencyRecord before = record(withCheckpoint);
    clock.advance(Duration.ofSeconds(3));
    byte[] binary = {0, (byte) 0xff, '\'', '\\', 0};
    Outcome failure = Outcome.failure("com.example.Declined", "card declined");

    Set<IdempotencyKey> lost = completeAll.apply(new Completion[] {
        new Completion(plain, tokens[0], text("one")),
        new Completion(withCheckpoint, tokens[1], Outcome.success("application/octet-stream",
            binary)),
        new Completion(failed, tokens[2], failure)});

    assertThat(lost).isEmpty();
    assertThat(claim(plain)).isEqualTo(new Claim.Replay(text("one"), tokens[0]));
    assertThat(claim(withCheckpoint)).isEqualTo(new Claim.Replay(
        Outcome.success("application/octet-stream", binary), tokens[1]));
    assertThat(claim(failed)).isEqualTo(new Claim.Replay(failure, tokens[2]));
    IdempotencyRecord after = record(withCheckpoint);
    assertThat(after.status()).isEqualTo(Status.COMPLETED);
    assertThat(after.token()).isEqualTo(before.token());
    assertThat(after.checkpoint()).isEqualTo(step);
    assertThat(after.attempts()).isEqualTo(before.attempts());
    assertThat(after.leaseUntil()).isEqualTo(before.leaseUntil());
    assertThat(after.createdAt()).isEqualTo(before.createdAt());
    assertThat(after.updatedAt()).isEqualTo(clock.instant());
    assertThat(after.expiresAt()).isEqualTo(clock.instant().plus(RETENTION));
  }

  @Test
  void reportsOnlyTheCompletionsWhoseLeaseWasLostAndStoresTheRest() {
    IdempotencyKey first = newKey();
    long firstToken = acquire(first).token();
    IdempotencyKey takenOver = newKey();
    Claim.Acquired zombie = acquire(takenOver);
    IdempotencyKey retried = newKey();
    long retriedToken = acquire(retried).token();
    store.fail(retried, retriedToken, "timeout", clock.instant(), RETENTION);
    IdempotencyKey finished = newKey();
    long finishedToken = acquire(finished).token();
    complete(finished, finishedToken, text("earlier"));
    IdempotencyKey unknown = newKey();
    clock.set(zombie.leaseUntil());
    Claim.Acquired successor = acquire(takenOver);
    IdempotencyKey last = newKey();
    long lastToken = acquire(last).token();
    IdempotencyRecord takenOverBefore = record(takenOver);
    IdempotencyRecord retriedBefore = record(retried);
    IdempotencyRecord finishedBefore = record(finished);

    Set<IdempotencyKey> lost = completeAll(
        new Completion(first, firstToken, text("first")),
        new Completion(takenOver, zombie.token(), text("zombie")),
        new Completion(retried, retriedToken, text("zombie")),
        new Completion(finished, finishedToken, text("again")),
        new Completion(unknown, 1, text("nobody")),
        new Completion(last, lastToken, text("last")));

    assertThat(lost).containsExactly(takenOver, retried, finished, unknown);
    assertThat(record(takenOver)).isEqualTo(takenOverBefore);
    assertThat(record(retried)).isEqualTo(retriedBefore);
    assertThat(record(finished)).isEqualTo(finishedBefore);
    assertThat(store.find(unknown)).isEmpty();
    assertThat(claim(first)).isEqualTo(new Claim.Replay(text("first"), firstToken));
    assertThat(claim(last)).isEqualTo(new Claim.Replay(text("last"), lastToken));
    assertThat(completeAll(new Completion(takenOver, successor.token(), text("successor"))))
        .isEmpty();
    assertThat(claim(takenOver)).isEqualTo(new Claim.Replay(text("successor"),
        successor.token()));
  }

  @Test
  void emptyBatchStoresNothing() {
    assertThat(completeAll()).isEmpty();
  }

  @Test
  void twoCompletionsForOneKeyAreRefusedBeforeAnythingIsStored() {
    IdempotencyKey other = newKey();
    long otherToken = acquire(other).token();
    IdempotencyKey key = newKey();
    long token = acquire(key).token();

    assertThatThrownBy(() -> completeAll(new Completion(other, otherToken, text("other")),
        new Completion(key, token, text("a")), new Completion(key, token, text("b"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key.toString());

    assertThat(record(other).status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(record(key).status()).isEqualTo(Status.IN_PROGRESS);
  }

  @Test
  void anOversizedOutcomeRefusesTheWholeBatchBeforeAnythingIsStored() {
    int limit = store.maxPayloadBytes();
    assumeTrue(limit <= 64 << 20, "the store's payload limit is too large to exceed here");
    IdempotencyKey small = newKey();
    long smallToken = acquire(small).token();
    IdempotencyKey large = newKey();
    long largeToken = acquire(large).token();

    assertThatThrownBy(() -> completeAll(new Completion(small, smallToken, text("fits")),
        new Completion(large, largeToken, Outcome.success("application/octet-stream",
            new byte[limit + 1]))))
        .isInstanceOf(PayloadTooLargeException.class);

    assertThat(record(small).status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(record(large).status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(completeAll(new Completion(small, smallToken, text("fits")))).isEmpty();
  }

  @ParameterizedTest(name = "on {0} threads")
  @EnumSource(Racers.class)
  @Tag("races")
  void racingBatchesOfOneTokenStoreExactlyOneOutcomePerKey(Racers racers) throws Exception {
    List<IdempotencyKey> keys = new ArrayList<>();
    List<ClaimRequest> requests = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      keys.add(newKey());
      requests.add(request(keys.get(i), FP));
    }
    List<Claim> claims = store.claimAll(requests);
    ExecutorService pool = racers.pool(4);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Set<IdempotencyKey>>> writers = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        String writer = "writer-" + w;
        writers.add(pool.submit(() -> {
          List<Completion> batch = new ArrayList<>();
          for (int i = 0; i < keys.size(); i++) {
            batch.add(new Completion(keys.get(i), ((Claim.Acquired) claims.get(i)).token(),
                text(writer)));
          }
          go.await();
          return store.completeAll(batch, clock.instant(), RETENTION);
        }));
      }
      go.countDown();
      int[] wins = new int[keys.size()];
      for (Future<Set<IdempotencyKey>> racer : writers) {
        Set<IdempotencyKey> lost = racer.get(60, TimeUnit.SECONDS);
        for (int i = 0; i < keys.size(); i++) {
          if (!lost.contains(keys.get(i))) {
            wins[i]++;
          }
        }
      }
      for (int i = 0; i < keys.size(); i++) {
        assertThat(wins[i]).as("writers that stored %s", keys.get(i)).isEqualTo(1);
        assertThat(record(keys.get(i)).status()).isEqualTo(Status.COMPLETED);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
