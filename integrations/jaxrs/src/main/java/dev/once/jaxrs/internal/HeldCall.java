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
 * @param <T> the stored form of a response
 */
public final class HeldCall<T> {

  private final CompletableFuture<Attempt> acquired = new CompletableFuture<>();
  private final CompletableFuture<Object> verdict = new CompletableFuture<>();
  private final CompletableFuture<Result<T>> done = new CompletableFuture<>();
  private final AtomicBoolean delivered = new AtomicBoolean();
  private volatile Throwable failure;

  private HeldCall() {}

  /**
   * Starts {@code once.call(key, fingerprint, codec, …)} on {@code executor}. The work gives up
   * waiting for the application's answer after {@code abandonAfter}: the claim is then released.
   */
  public static <T> HeldCall<T> start(Executor executor, Once once, IdempotencyKey key,
      Fingerprint fingerprint, Codec<T> codec, Duration abandonAfter) {
    HeldCall<T> call = new HeldCall<>();
    executor.execute(() -> {
      try {
        call.done.complete(once.<T, Exception>call(key, fingerprint, codec,
            attempt -> call.work(attempt, abandonAfter)));
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
  private T work(Attempt attempt, Duration abandonAfter) throws Exception {
    acquired.complete(attempt);
    Object answer;
    try {
      answer = verdict.get(abandonAfter.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new ResponseNotStored("no response within " + abandonAfter
          + " (async processing is not supported)", System.Logger.Level.WARNING);
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
