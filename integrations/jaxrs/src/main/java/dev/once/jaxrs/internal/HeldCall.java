package dev.once.jaxrs.internal;

import dev.once.Attempt;
import dev.once.Codec;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Result;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One protected request's {@link Once#call}, run on a thread of its own because Jakarta REST runs
 * the resource between two filters rather than inside one: the call claims the key; when it
 * acquires it, its work hands the {@link Attempt} to the request thread ({@link #awaitStart}) and
 * waits for what the application answered ({@link #deliver}: the response to store, or the
 * exception to fail with); the call then stores the outcome and the request thread, waiting in
 * {@link #awaitStored}, sends the response. Nothing reaches the client before the outcome is
 * stored.
 *
 * <p>No path gives the claim back while the resource may still be running. A synchronous
 * resource runs on the request thread: the work waits for it, however long (the {@code Once}'s
 * heartbeat, if any, keeps the lease), until the resource came back ({@link #cameBack}); from
 * then on it waits at most {@code abandonAfter} for the answer, and settles on what the resource
 * came back with if none comes. An asynchronous resource runs wherever it resumes: after
 * {@code abandonAfter} without an answer the work stops waiting and leaves the claim to its
 * lease ({@link ClaimLeftToLease}), never failing nor releasing it.
 *
 * @param <T> the stored form of a response
 */
public final class HeldCall<T> {

  private static final System.Logger LOG = System.getLogger(HeldCall.class.getName());

  private final CompletableFuture<Attempt> acquired = new CompletableFuture<>();
  private final CompletableFuture<Object> verdict = new CompletableFuture<>();
  /** What to settle on if no answer is delivered: the resource came back (see cameBack). */
  private final CompletableFuture<Object> cameBack = new CompletableFuture<>();
  private final CompletableFuture<Result<T>> done = new CompletableFuture<>();
  private final AtomicBoolean delivered = new AtomicBoolean();
  private volatile Throwable failure;
  private volatile Throwable afterWork;

  private HeldCall() {}

  /**
   * Starts {@code once.call(key, fingerprint, codec, …)} on {@code executor}, for a synchronous
   * resource or an asynchronous one ({@code async}); see the class comment for
   * {@code abandonAfter}.
   */
  public static <T> HeldCall<T> start(Executor executor, Once once, IdempotencyKey key,
      Fingerprint fingerprint, Codec<T> codec, Duration abandonAfter, boolean async) {
    HeldCall<T> call = new HeldCall<>();
    executor.execute(() -> {
      try {
        call.done.complete(once.<T, Exception>call(key, fingerprint, codec,
            attempt -> call.work(attempt, abandonAfter, async)));
      } catch (Throwable t) {
        call.done.completeExceptionally(t);
      } finally {
        // Whatever happened, a request thread waiting to start must not wait forever.
        call.acquired.completeExceptionally(new IllegalStateException("call ended"));
      }
    });
    return call;
  }

  @SuppressWarnings("unchecked")
  private T work(Attempt attempt, Duration abandonAfter, boolean async) throws Exception {
    acquired.complete(attempt);
    long wait = abandonAfter.toMillis();
    Object answer;
    try {
      if (async) {
        // The resource runs (or waits) wherever it resumes: bounded.
        CompletableFuture.anyOf(verdict, cameBack).get(wait, TimeUnit.MILLISECONDS);
      } else {
        // The resource runs on the request thread: as long as it runs, the claim stays.
        CompletableFuture.anyOf(verdict, cameBack).get();
      }
    } catch (TimeoutException e) {
      LOG.log(System.Logger.Level.WARNING, () -> "no response to " + attempt.idempotencyKey()
          + " from its asynchronous resource within " + abandonAfter + "; the claim is left to"
          + " its lease (a duplicate gets 409 until it passes), neither released nor stored");
      throw new ClaimLeftToLease(attempt.idempotencyKey(), attempt.token(), "no response within "
          + abandonAfter + " (asynchronous resource); the claim is left to its lease");
    } catch (ExecutionException e) {
      // Never completed exceptionally: look below.
    }
    try {
      answer = verdict.get(wait, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      // The resource came back, but its response never reached the feature: settle on what it
      // came back with (a failure, or its status stored without a body), never run it again.
      LOG.log(System.Logger.Level.WARNING, () -> "the resource of " + attempt.idempotencyKey()
          + " came back but its response did not reach the feature within " + abandonAfter
          + "; settled without it");
      delivered.set(true);
      answer = cameBack.getNow(null);
    }
    if (answer instanceof Exception e) {
      throw e;
    }
    if (answer instanceof Error e) {
      throw e;
    }
    if (answer instanceof Throwable t) {
      throw new IllegalStateException(t);
    }
    return (T) answer;
  }

  /**
   * The resource came back (returned a response, or threw: {@link #failed}); {@code settlement}
   * is what to settle on if its response never reaches {@link #deliver} — the response to store
   * (without its body), or the failure to fail with. Only the first call counts.
   *
   * @return whether this was the first call
   */
  public boolean cameBack(Object settlement) {
    return cameBack.complete(settlement);
  }

  /** Whether the resource came back. */
  public boolean hasComeBack() {
    return cameBack.isDone();
  }

  /**
   * Something threw after the resource came back (a response filter, a writer): not a failure
   * of the work, which must not run again; remembered for the filters to settle on.
   */
  public void failedAfterWork(Throwable error) {
    if (afterWork == null) {
      afterWork = error;
    }
  }

  /** What threw after the resource came back, if anything did. */
  public Throwable afterWork() {
    return afterWork;
  }

  /** What the resource came back with, to settle on: see {@link #cameBack}. */
  public Object settlement() {
    return cameBack.getNow(null);
  }

  /**
   * Waits until the application may run (the key was acquired: its attempt) or the call was
   * answered without running it (null: see {@link #outcome()}).
   */
  public Attempt awaitStart() throws InterruptedException {
    try {
      CompletableFuture.anyOf(acquired, done).get();
    } catch (ExecutionException ignored) {
      // Either completed: look below.
    }
    if (acquired.isDone() && !acquired.isCompletedExceptionally()) {
      return acquired.getNow(null);
    }
    try {
      done.get();
    } catch (ExecutionException ignored) {
      // outcome() says what.
    }
    return null;
  }

  /** The application threw {@code failure}: deliver it, not the response, when asked to. */
  public void failed(Throwable failure) {
    this.failure = failure;
  }

  /** What the application threw, if it threw. */
  public Throwable failure() {
    return failure;
  }

  /**
   * Gives the call the application's answer: {@code response} to store, or the failure recorded
   * with {@link #failed} if any. Only the first delivery counts.
   *
   * @return whether this was the first delivery
   */
  public boolean deliver(T response) {
    if (!delivered.compareAndSet(false, true)) {
      return false;
    }
    verdict.complete(failure != null ? failure : response);
    return true;
  }

  /** Gives the call an exception to fail with instead of a response. */
  public boolean deliverFailure(Throwable failure) {
    if (!delivered.compareAndSet(false, true)) {
      return false;
    }
    verdict.complete(failure);
    return true;
  }

  /** Whether an answer was delivered. */
  public boolean isDelivered() {
    return delivered.get();
  }

  /** Waits until the call ended: the outcome stored, or not. */
  public void awaitStored() {
    try {
      done.join();
    } catch (CompletionException | java.util.concurrent.CancellationException ignored) {
      // outcome() says what.
    }
  }

  /**
   * The call's result once ended.
   *
   * @throws Throwable what the call threw
   */
  public Result<T> outcome() throws Throwable {
    try {
      return done.getNow(null);
    } catch (CompletionException e) {
      throw e.getCause();
    }
  }
}
