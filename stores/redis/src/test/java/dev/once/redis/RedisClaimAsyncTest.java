package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The store's native {@code claimAsync}: on an open connection it never needs a thread that may
 * block (every branch of the claim: a new key, a duplicate, a replay, a takeover by
 * compare-and-set); only opening the first connection and giving back a claim whose answer was lost
 * go to the executor given. The conformance suite checks that it decides as {@code claim} does.
 */
class RedisClaimAsyncTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(1);
  private static final Fingerprint FP = Fingerprint.of("payload");
  private static RedisServerProcess server;

  private final ManualClock clock = new ManualClock();
  /** Tasks the store handed to its blocking executor, run only when the test says so. */
  private final BlockingQueue<Runnable> handed = new LinkedBlockingQueue<>();
  private final Executor hand = handed::add;

  @BeforeAll
  static void startServer() {
    server = RedisServerProcess.start();
  }

  @AfterAll
  static void stopServer() {
    server.close();
  }

  @Test
  void onAnOpenConnectionEveryBranchOfTheClaimIsDecidedWithoutTheExecutor() throws Exception {
    try (RedisStore store = RedisStore.builder(server.uri()).build()) {
      IdempotencyKey key = IdempotencyKey.of("async", "branches");
      store.find(key); // the connection is open

      Claim first = answer(store.claimAsync(request(key), hand));
      Claim duplicate = answer(store.claimAsync(request(key), hand));
      clock.advance(LEASE.plusSeconds(1));
      Claim takeover = answer(store.claimAsync(request(key), hand));
      long token = ((Claim.Acquired) takeover).token();
      Outcome outcome = Outcome.success("text/plain", "done".getBytes(StandardCharsets.UTF_8));
      store.complete(key, token, outcome, clock.instant(), RETENTION);
      Claim replay = answer(store.claimAsync(request(key), hand));
      Claim mismatch = answer(store.claimAsync(new ClaimRequest(key, Fingerprint.of("other"),
          clock.instant(), LEASE, RETENTION), hand));

      assertThat(first).isInstanceOf(Claim.Acquired.class);
      assertThat(duplicate).isInstanceOf(Claim.InProgress.class);
      assertThat(takeover).as("taken over by compare-and-set")
          .isInstanceOfSatisfying(Claim.Acquired.class,
              t -> assertThat(t.token()).isGreaterThan(((Claim.Acquired) first).token()));
      assertThat(replay).isEqualTo(new Claim.Replay(outcome, token));
      assertThat(mismatch).isInstanceOf(Claim.Mismatch.class);
      assertThat(handed).as("nothing handed to the blocking executor").isEmpty();
    }
  }

  @Test
  void theFirstClaimOpensTheConnectionOnTheExecutor() throws Exception {
    try (RedisStore store = RedisStore.builder(server.uri()).build()) {
      IdempotencyKey key = IdempotencyKey.of("async", "first");

      CompletableFuture<Claim> claim = store.claimAsync(request(key), hand).toCompletableFuture();
      assertThat(claim).as("waits for a thread that may block to open the connection")
          .isNotDone();
      handed.remove().run();

      assertThat(answer(claim)).isInstanceOf(Claim.Acquired.class);
      assertThat(answer(store.claimAsync(request(IdempotencyKey.of("async", "second")), hand)))
          .isInstanceOf(Claim.Acquired.class);
      assertThat(handed).isEmpty();
    }
  }

  /**
   * The server is frozen (SIGSTOP) with the claim's {@code SET} in its socket buffer: the claim
   * times out, not knowing whether it was made. When the server runs again it makes it; the store
   * then reads it back on the executor and gives it back (FAILED, retryable), so that a retry
   * claims the key at once instead of waiting for a lease nobody holds.
   */
  @Test
  void aClaimWhoseAnswerWasLostIsReadBackAndGivenBackOnTheExecutor() throws Exception {
    try (RedisServerProcess frozen = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(frozen.uri())
            .commandTimeout(Duration.ofMillis(300)).build()) {
      IdempotencyKey key = IdempotencyKey.of("async", "lost-answer");
      store.find(key); // the connection is open
      ClaimRequest request = request(key);

      frozen.freeze();
      CompletableFuture<Claim> claim;
      Runnable release;
      try {
        claim = store.claimAsync(request, hand).toCompletableFuture();
        release = handed.poll(30, TimeUnit.SECONDS); // after the command timeout
      } finally {
        frozen.thaw();
      }
      assertThat(release).as("the read-back and release, handed to the executor").isNotNull();
      assertThat(claim).isNotDone();
      release.run();

      assertThat(claim).failsWithin(Duration.ofSeconds(30))
          .withThrowableOfType(ExecutionException.class)
          .havingCause().isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).isTrue());
      IdempotencyRecord record = store.find(key).orElseThrow();
      assertThat(record.status()).as("made when the server ran again, then given back")
          .isEqualTo(Status.FAILED);
      assertThat(record.claimId()).isEqualTo(request.claimId());
      assertThat(answer(store.claimAsync(request(key), hand)))
          .as("a retry claims it at once").isInstanceOf(Claim.Acquired.class);
    }
  }

  /**
   * The store is closed while a claim's {@code SET} waits in a frozen server's socket buffer: the
   * claim still answers, as a failure that may have been applied (nothing is left to read it back
   * with), and closing does not wait for the frozen server.
   */
  @Test
  void aClaimInFlightWhenTheStoreIsClosedFailsAsMaybeApplied() throws Exception {
    try (RedisServerProcess frozen = RedisServerProcess.start()) {
      RedisStore store = RedisStore.builder(frozen.uri()).commandTimeout(Duration.ofMillis(300))
          .build();
      IdempotencyKey key = IdempotencyKey.of("async", "closed");
      store.find(key); // the connection is open
      Executor threads = task -> new Thread(task).start();
      CompletableFuture<Claim> claim;
      frozen.freeze();
      try {
        claim = store.claimAsync(request(key), threads).toCompletableFuture();
        store.close();
        assertThat(claim).failsWithin(Duration.ofSeconds(30))
            .withThrowableOfType(ExecutionException.class)
            .havingCause().isInstanceOfSatisfying(StoreUnavailableException.class,
                e -> assertThat(e.mayHaveBeenApplied()).isTrue());
      } finally {
        frozen.thaw();
      }
      assertThat(store.claimAsync(request(key), threads).toCompletableFuture())
          .as("a claim after close is refused, nothing sent")
          .failsWithin(Duration.ofSeconds(30))
          .withThrowableOfType(ExecutionException.class)
          .havingCause().isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).isFalse());
    }
  }

  private ClaimRequest request(IdempotencyKey key) {
    return new ClaimRequest(key, FP, clock.instant(), LEASE, RETENTION);
  }

  private static Claim answer(java.util.concurrent.CompletionStage<Claim> claim)
      throws Exception {
    return claim.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }
}
