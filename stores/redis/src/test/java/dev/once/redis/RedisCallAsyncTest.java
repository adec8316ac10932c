package dev.once.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.OutcomeUnknownException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.redis.testing.RedisServerProcess;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code Once.callAsync} on a real Redis, end to end: the native claim and the native completion,
 * with the server frozen (SIGSTOP) at the point under test. Each test has a server of its own.
 */
class RedisCallAsyncTest {

  private static final Duration TIMEOUT = Duration.ofMillis(300);
  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Fingerprint FP = Fingerprint.of("payload");

  private final ManualClock clock = new ManualClock();
  private final ExecutorService executor = Executors.newCachedThreadPool();

  @AfterEach
  void shutDown() {
    executor.shutdownNow();
  }

  /**
   * The work's stage completes while the server is frozen: the native completion and its two
   * blocking retries time out. The caller is told the outcome is unknown (never a value whose
   * outcome is not stored); when the server runs again, the queued completion is applied, the
   * repeated ones acknowledged, and a duplicate replays: the work ran once.
   */
  @Test
  void aCompletionUnansweredByAFrozenServerIsOutcomeUnknownThenStoredAndReplayed()
      throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      Events events = new Events();
      Once once = Once.builder(store).clock(clock).lease(LEASE).listener(events)
          .sleeper(pause -> { }).asyncExecutor(executor).build();
      IdempotencyKey key = IdempotencyKey.of("async-call", "frozen-complete");
      // The connection is open and the COMPLETE script cached: the claim and completion are native,
      // and the completion sent while the server is frozen is one EVALSHA the server will run.
      once.callAsync(IdempotencyKey.of("async-call", "warm"), FP, Codecs.utf8(),
          a -> CompletableFuture.completedFuture("warm")).get(30, TimeUnit.SECONDS);
      AtomicInteger runs = new AtomicInteger();
      CompletableFuture<String> stage = new CompletableFuture<>();

      CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(), a -> {
        runs.incrementAndGet();
        return stage;
      });
      awaitRuns(runs);
      server.freeze();
      try {
        stage.complete("done");
        assertThat(answer).failsWithin(Duration.ofSeconds(30))
            .withThrowableOfType(ExecutionException.class)
            .havingCause().isInstanceOf(OutcomeUnknownException.class);
      } finally {
        server.thaw();
      }

      IdempotencyRecord record = store.find(key).orElseThrow();
      assertThat(record.status()).as("the queued completion applied when the server ran")
          .isEqualTo(Status.COMPLETED);
      Result<String> replay = once.callAsync(key, FP, Codecs.utf8(), a -> {
        runs.incrementAndGet();
        return CompletableFuture.completedFuture("again");
      }).get(30, TimeUnit.SECONDS);
      assertThat(replay.replayed()).isTrue();
      assertThat(replay.value()).isEqualTo("done");
      assertThat(runs).hasValue(1);
      assertThat(events.of(key)).containsExactly("started", "store:claim:true", "acquired",
          "store:complete:false", "store:complete:false", "store:complete:false",
          "outcomeUnknown", "ended:OUTCOME_UNKNOWN",
          "started", "store:claim:true", "replayed", "ended:REPLAYED");
    }
  }

  /**
   * The native completion times out with its script in a frozen server's socket buffer; the
   * server runs again during the pause before the blocking retry (the sleeper thaws it), so the
   * first write is applied and the retry finds the record completed under its own token with its
   * own outcome: acknowledged, not a lost lease. The caller gets the value, once stored.
   */
  @Test
  void aNativeCompletionAppliedLateIsAcknowledgedByTheBlockingRetry() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      Events events = new Events();
      Once once = Once.builder(store).clock(clock).lease(LEASE).listener(events)
          .sleeper(pause -> server.thaw()).asyncExecutor(executor).build();
      once.callAsync(IdempotencyKey.of("async-call", "warm"), FP, Codecs.utf8(),
          a -> CompletableFuture.completedFuture("warm")).get(30, TimeUnit.SECONDS);
      IdempotencyKey key = IdempotencyKey.of("async-call", "late-complete");
      AtomicInteger runs = new AtomicInteger();
      CompletableFuture<String> stage = new CompletableFuture<>();

      CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(), a -> {
        runs.incrementAndGet();
        return stage;
      });
      awaitRuns(runs);
      server.freeze();
      Result<String> result;
      try {
        stage.complete("done");
        result = answer.get(30, TimeUnit.SECONDS);
      } finally {
        server.thaw();
      }

      assertThat(result.value()).isEqualTo("done");
      assertThat(result.replayed()).isFalse();
      assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
      assertThat(events.of(key)).containsExactly("started", "store:claim:true", "acquired",
          "store:complete:false", "store:complete:true", "completed", "ended:COMPLETED");
    }
  }

  /**
   * Graceful stop: the asyncExecutor is shut down while the work runs, and the native completion
   * is refused (READONLY: the server was made a replica) and the server writable again during the
   * pause before the retry. With no executor, the retry ran where the refused task was handed
   * over, which is Lettuce's event loop: a blocking completion there waits for a reply only that
   * thread can read, so it timed out although the server answered, and the caller was told the
   * outcome is unknown instead of getting its value. Now a refused task runs on a thread of its
   * own.
   */
  @Test
  void aRefusingExecutorDoesNotRunTheCompletionRetryOnTheEventLoop() throws Exception {
    ExecutorService stopping = Executors.newCachedThreadPool();
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      Once once = Once.builder(store).clock(clock).lease(LEASE)
          .sleeper(pause -> server.call("REPLICAOF", "NO", "ONE")).asyncExecutor(stopping)
          .build();
      once.callAsync(IdempotencyKey.of("async-call", "warm"), FP, Codecs.utf8(),
          a -> CompletableFuture.completedFuture("warm")).get(30, TimeUnit.SECONDS);
      IdempotencyKey key = IdempotencyKey.of("async-call", "refused");
      AtomicInteger runs = new AtomicInteger();
      CompletableFuture<String> stage = new CompletableFuture<>();
      CompletableFuture<Result<String>> answer = once.callAsync(key, FP, Codecs.utf8(), a -> {
        runs.incrementAndGet();
        return stage;
      });
      awaitRuns(runs);
      stopping.shutdown();
      server.call("REPLICAOF", "127.0.0.1", String.valueOf(RedisServerProcess.freePort()));

      stage.complete("done");

      assertThat(answer.get(30, TimeUnit.SECONDS).value()).isEqualTo("done");
    } finally {
      stopping.shutdownNow();
    }
  }

  /**
   * The listener hears the same events, in the same order, whether the call is blocking or
   * asynchronous, on the way that succeeds.
   */
  @Test
  void callAsyncTellsTheListenerWhatCallTellsIt() throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      Events events = new Events();
      Once once = Once.builder(store).clock(clock).lease(LEASE).listener(events)
          .asyncExecutor(executor).build();
      IdempotencyKey blocking = IdempotencyKey.of("async-call", "blocking");
      IdempotencyKey async = IdempotencyKey.of("async-call", "async");
      store.find(blocking);

      once.call(blocking, FP, Codecs.utf8(), a -> "v");
      once.callAsync(async, FP, Codecs.utf8(), a -> CompletableFuture.completedFuture("v"))
          .get(30, TimeUnit.SECONDS);
      once.call(blocking, FP, Codecs.utf8(), a -> "v");
      once.callAsync(async, FP, Codecs.utf8(), a -> CompletableFuture.completedFuture("v"))
          .get(30, TimeUnit.SECONDS);

      assertThat(events.of(async)).isEqualTo(events.of(blocking)).containsExactly("started",
          "store:claim:true", "acquired", "store:complete:true", "completed", "ended:COMPLETED",
          "started", "store:claim:true", "replayed", "ended:REPLAYED");
    }
  }

  /**
   * Every listener event of an asynchronous call and the completion of its answer happen on the
   * asyncExecutor's threads, never on Lettuce's event loop nor on the timer that times commands
   * out: new key, replay, duplicate in progress, and a completion that times out.
   */
  @Test
  void nothingOfAnAsyncCallRunsOnLettucesThreads() throws Exception {
    java.util.Set<String> threads = java.util.concurrent.ConcurrentHashMap.newKeySet();
    ExecutorService named = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "test-async");
      t.setDaemon(true);
      return t;
    });
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      OnceListener recorder = new OnceListener() {
        @Override
        public void onStoreCall(Call call, String operation, Duration elapsed, boolean ok) {
          threads.add(Thread.currentThread().getName());
        }

        @Override
        public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed,
            Throwable failure) {
          threads.add(Thread.currentThread().getName());
        }
      };
      Once once = Once.builder(store).clock(clock).lease(LEASE).listener(recorder)
          .sleeper(pause -> { }).asyncExecutor(named).build();
      store.find(IdempotencyKey.of("async-call", "open"));
      IdempotencyKey key = IdempotencyKey.of("async-call", "threads");
      CompletableFuture<String> stage = new CompletableFuture<>();
      CompletableFuture<Result<String>> first = once.callAsync(key, FP, Codecs.utf8(), a -> stage);
      CompletableFuture<String> answeredOn = first.thenApply(r -> Thread.currentThread().getName());
      Result<String> duplicate;
      try {
        once.callAsync(key, FP, Codecs.utf8(), a -> CompletableFuture.completedFuture("x"))
            .get(30, TimeUnit.SECONDS);
      } catch (ExecutionException inProgress) {
        // RequestInProgressException: the first holds the key.
      }
      stage.complete("done");
      // Waiting on answeredOn, not on first: a thread waiting in first.get() may run first's
      // dependents itself once it is completed, and answeredOn would name that thread.
      answeredOn.get(30, TimeUnit.SECONDS);
      duplicate = once.callAsync(key, FP, Codecs.utf8(),
          a -> CompletableFuture.completedFuture("x")).get(30, TimeUnit.SECONDS);

      IdempotencyKey frozenKey = IdempotencyKey.of("async-call", "threads-frozen");
      CompletableFuture<String> late = new CompletableFuture<>();
      AtomicInteger runs = new AtomicInteger();
      CompletableFuture<Result<String>> unknown = once.callAsync(frozenKey, FP, Codecs.utf8(),
          a -> {
            runs.incrementAndGet();
            return late;
          });
      awaitRuns(runs); // the claim answered, the work running
      server.freeze();
      try {
        late.complete("done");
        assertThat(unknown).failsWithin(Duration.ofSeconds(30));
      } finally {
        server.thaw();
      }

      assertThat(duplicate.replayed()).isTrue();
      assertThat(answeredOn.get(30, TimeUnit.SECONDS)).isEqualTo("test-async");
      assertThat(threads).containsOnly("test-async");
    } finally {
      named.shutdownNow();
    }
  }

  /**
   * A record key holding a hash (another application's data): the claim's {@code SET} is refused
   * with WRONGTYPE, so nothing was written: the asynchronous claim says so, hands nothing to the
   * executor (no read-back, no release) and leaves the hash as it was.
   */
  @Test
  void aWrongTypeAtTheRecordKeyFailsTheAsyncClaimAsNotAppliedAndReleasesNothing()
      throws Exception {
    try (RedisServerProcess server = RedisServerProcess.start();
        RedisStore store = RedisStore.builder(server.uri()).commandTimeout(TIMEOUT).build()) {
      IdempotencyKey key = IdempotencyKey.of("async-call", "wrongtype");
      store.find(IdempotencyKey.of("async-call", "open")); // the connection is open
      server.call("HSET", "once: " + key.scope() + " " + key.tenant() + " " + key.key(), "f", "v");
      BlockingQueue<Runnable> handed = new LinkedBlockingQueue<>();

      CompletableFuture<Claim> claim = store.claimAsync(
          new ClaimRequest(key, FP, clock.instant(), LEASE, Duration.ofHours(1)), handed::add)
          .toCompletableFuture();

      assertThat(claim).failsWithin(Duration.ofSeconds(30))
          .withThrowableOfType(ExecutionException.class)
          .havingCause().isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).isFalse());
      assertThat(handed).as("nothing to read back or release").isEmpty();
      assertThat(server.call("HGET", "once: " + key.scope() + " " + key.tenant() + " "
          + key.key(), "f")).isNotNull();
    }
  }

  private static void awaitRuns(AtomicInteger runs) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (runs.get() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(runs).hasValue(1);
  }

  /** The call-scoped events, per key, in order. */
  private static final class Events implements OnceListener {
    private final List<String[]> told = Collections.synchronizedList(new ArrayList<>());

    List<String> of(IdempotencyKey key) {
      List<String> of = new ArrayList<>();
      synchronized (told) {
        for (String[] e : told) {
          if (e[0].equals(key.toString())) {
            of.add(e[1]);
          }
        }
      }
      return of;
    }

    private void add(IdempotencyKey key, String event) {
      told.add(new String[] {key.toString(), event});
    }

    @Override
    public void onCallStarted(Call call) {
      add(call.key(), "started");
    }

    @Override
    public void onStoreCall(Call call, String operation, Duration elapsed, boolean succeeded) {
      add(call.key(), "store:" + operation + ":" + succeeded);
    }

    @Override
    public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
      add(key, "acquired");
    }

    @Override
    public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
      add(key, "completed");
    }

    @Override
    public void onReplayed(IdempotencyKey key) {
      add(key, "replayed");
    }

    @Override
    public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
      add(key, "outcomeUnknown");
    }

    @Override
    public void onLeaseLost(IdempotencyKey key, long token) {
      add(key, "leaseLost");
    }

    @Override
    public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
      add(call.key(), "ended:" + outcome);
    }
  }
}
