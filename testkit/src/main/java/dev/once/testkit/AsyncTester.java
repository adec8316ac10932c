package dev.once.testkit;

import static dev.once.testkit.StoreConformanceSuite.LEASE;
import static dev.once.testkit.StoreConformanceSuite.RACERS;
import static dev.once.testkit.StoreConformanceSuite.RETENTION;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The store under {@link Once#callAsync}, the asynchronous path, on real threads: the store's
 * {@code claimAsync} deciding as {@code claim} does (native or on the executor given), the outcome's
 * write on the Once's executor, the work's stage completed on threads of its own. A replay, a
 * reused key, a retryable and a terminal failure, an answer cancelled after the claim, and callers
 * racing on one key.
 */
abstract class AsyncTester extends ConformanceTester {

  private static final long WAIT_SECONDS = 30;
  private ExecutorService storeThreads;
  private ExecutorService workThreads;

  AsyncTester(StoreConformanceSuite suite) {
    super(suite);
  }

  @BeforeEach
  void startThreads() {
    storeThreads = Executors.newFixedThreadPool(4);
    workThreads = Executors.newFixedThreadPool(4);
  }

  @AfterEach
  void stopThreads() {
    storeThreads.shutdownNow();
    workThreads.shutdownNow();
  }

  private Once async(Once.Builder builder) {
    return once(builder.asyncExecutor(storeThreads));
  }

  private <T> T await(CompletableFuture<T> answer) throws Exception {
    try {
      return answer.get(WAIT_SECONDS, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }

  /** How the test's answer failed: its cause, as {@code call} would have thrown it. */
  private Throwable failureOf(CompletableFuture<?> answer) throws Exception {
    try {
      answer.get(WAIT_SECONDS, TimeUnit.SECONDS);
      throw new AssertionError("expected the answer to fail");
    } catch (ExecutionException e) {
      return e.getCause();
    }
  }

  private CompletableFuture<String> later(String value, AtomicInteger runs) {
    return CompletableFuture.supplyAsync(() -> value + "-" + runs.incrementAndGet(), workThreads);
  }

  @Test
  void claimAsyncDecidesAsClaimDoes() throws Exception {
    IdempotencyKey key = newKey();
    ClaimRequest first = request(key, FP);

    Claim acquired = await(store.claimAsync(first, storeThreads).toCompletableFuture());
    Claim resent = await(store.claimAsync(first, storeThreads).toCompletableFuture());
    Claim another = await(store.claimAsync(request(key, FP), storeThreads)
        .toCompletableFuture());
    assertThat(acquired).isInstanceOf(Claim.Acquired.class);
    assertThat(resent).as("its own claim, re-sent").isInstanceOfSatisfying(Claim.Acquired.class,
        r -> assertThat(r.token()).isEqualTo(((Claim.Acquired) acquired).token()));
    assertThat(another).isInstanceOf(Claim.InProgress.class);

    complete(key, ((Claim.Acquired) acquired).token(), text("done"));
    assertThat(await(store.claimAsync(request(key, FP), storeThreads).toCompletableFuture()))
        .isInstanceOfSatisfying(Claim.Replay.class,
            r -> assertThat(r.outcome().body()).isEqualTo(text("done").body()));
    assertThat(await(store.claimAsync(request(key, OTHER_FP), storeThreads)
        .toCompletableFuture())).isInstanceOf(Claim.Mismatch.class);
  }

  @Test
  void completeAsyncWritesAsCompleteDoes() throws Exception {
    IdempotencyKey key = newKey();
    long token = acquire(key).token();
    Outcome done = text("done");

    await(completeAsync(key, token, done));
    await(completeAsync(key, token, done)); // repeated after it was applied: acknowledged
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    assertThat(claim(key)).isEqualTo(new Claim.Replay(done, token));

    assertThat(failureOf(completeAsync(key, token, text("another outcome"))))
        .as("another outcome under the same token").isInstanceOf(LeaseLostException.class);
    IdempotencyKey stale = newKey();
    long first = acquire(stale).token();
    clock.advance(LEASE.plusSeconds(1));
    long successor = acquire(stale).token();
    assertThat(failureOf(completeAsync(stale, first, text("late"))))
        .as("a stale token").isInstanceOf(LeaseLostException.class);
    assertThat(record(stale).status()).isEqualTo(Status.IN_PROGRESS);
    assertThat(record(stale).token()).isEqualTo(successor);
  }

  /** The store's {@code completeAsync}: its refusals too come through the stage, never thrown. */
  private CompletableFuture<Void> completeAsync(IdempotencyKey key, long token, Outcome outcome) {
    return store.completeAsync(key, token, outcome, clock.instant(), RETENTION, storeThreads)
        .toCompletableFuture();
  }

  @Test
  void anAsyncCallIsStoredAndItsDuplicatesReplayedByEitherPath() throws Exception {
    Once once = async(Once.builder(store));
    IdempotencyKey key = newKey();
    AtomicInteger runs = new AtomicInteger();

    Result<String> first = await(once.callAsync(key, FP, Codecs.utf8(),
        a -> later("charge", runs)));
    Result<String> again = await(once.callAsync(key, FP, Codecs.utf8(),
        a -> later("charge", runs)));
    String blocking = once.execute(key, FP, Codecs.utf8(), a -> "charge-blocking");

    assertThat(first).isEqualTo(new Result<>("charge-1", false, record(key).token()));
    assertThat(again).isEqualTo(new Result<>("charge-1", true, first.token()));
    assertThat(blocking).isEqualTo("charge-1");
    assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    assertThat(runs).hasValue(1);
  }

  @Test
  void aReusedKeyIsRefused() throws Exception {
    Once once = async(Once.builder(store));
    IdempotencyKey key = newKey();
    await(once.callAsync(key, FP, Codecs.utf8(), a -> CompletableFuture.completedFuture("a")));

    assertThat(failureOf(once.callAsync(key, OTHER_FP, Codecs.utf8(),
        a -> CompletableFuture.completedFuture("b")))).isInstanceOf(KeyReusedException.class);
  }

  @Test
  void aFailedStageReleasesTheKeyAndATerminalOneIsReplayed() throws Exception {
    Once once = async(Once.builder(store)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class)));
    IdempotencyKey retryable = newKey();
    IdempotencyKey terminal = newKey();
    IOException down = new IOException("gateway down");

    assertThat(failureOf(once.callAsync(retryable, FP, Codecs.utf8(),
        a -> CompletableFuture.supplyAsync(() -> {
          throw new java.io.UncheckedIOException(down);
        }, workThreads)))).isInstanceOf(java.io.UncheckedIOException.class).hasCause(down);
    assertThat(record(retryable).status()).isEqualTo(Status.FAILED);
    assertThat(await(once.callAsync(retryable, FP, Codecs.utf8(),
        a -> CompletableFuture.completedFuture("retried"))).value()).isEqualTo("retried");

    assertThat(failureOf(once.callAsync(terminal, FP, Codecs.utf8(),
        a -> CompletableFuture.failedFuture(new IllegalArgumentException("declined")))))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(failureOf(once.callAsync(terminal, FP, Codecs.utf8(),
        a -> CompletableFuture.completedFuture("must not run"))))
        .isInstanceOf(ReplayedFailureException.class);
  }

  @Test
  void anAnswerCancelledAfterTheClaimStillHasItsOutcomeStored() throws Exception {
    Once once = async(Once.builder(store));
    IdempotencyKey key = newKey();
    CompletableFuture<String> stage = new CompletableFuture<>();
    CountDownLatch started = new CountDownLatch(1);

    CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(), a -> {
      started.countDown();
      return stage;
    });
    assertThat(started.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
    answer.cancel(true);
    assertThat(failureOf(once.callAsync(key, FP, Codecs.utf8(),
        a -> CompletableFuture.completedFuture("meanwhile"))))
        .isInstanceOf(RequestInProgressException.class);
    workThreads.execute(() -> stage.complete("charged"));

    Await.until("the outcome stored", () -> record(key).status() == Status.COMPLETED);
    assertThat(await(once.callAsync(key, FP, Codecs.utf8(),
        a -> CompletableFuture.completedFuture("again"))).value()).isEqualTo("charged");
  }

  @Test
  void asyncCallersRacingOnOneKeyRunItOnce() throws Exception {
    Once once = async(Once.builder(store));
    IdempotencyKey key = newKey();
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch go = new CountDownLatch(1);
    List<CompletableFuture<CompletableFuture<Result<String>>>> calls = new ArrayList<>();
    ExecutorService callers = Executors.newFixedThreadPool(RACERS);
    try {
      for (int i = 0; i < RACERS; i++) {
        calls.add(CompletableFuture.supplyAsync(() -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return once.callAsync(key, FP, Codecs.utf8(), a -> later("charge", runs));
        }, callers));
      }
      go.countDown();
      int ran = 0;
      for (CompletableFuture<CompletableFuture<Result<String>>> call : calls) {
        CompletableFuture<Result<String>> answer = call.get(WAIT_SECONDS, TimeUnit.SECONDS);
        try {
          Result<String> result = await(answer);
          assertThat(result.value()).isEqualTo("charge-1");
          ran += result.replayed() ? 0 : 1;
        } catch (RequestInProgressException stillRunning) {
          // A duplicate that came while the first ran: rejected, as the blocking path does.
        }
      }
      assertThat(runs).hasValue(1);
      assertThat(ran).isEqualTo(1);
      assertThat(record(key).status()).isEqualTo(Status.COMPLETED);
    } finally {
      callers.shutdownNow();
    }
  }
}
