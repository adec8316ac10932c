package dev.once.internal;

import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Supplier;

/**
 * The store as {@link Execution} calls it: each call timed on the ticker and reported to the
 * listener; {@link #forCall} also reports it as a store call of one call.
 */
final class StoreCalls {

  private final IdempotencyStore store;
  private final OnceListener listener;
  private final java.util.function.LongSupplier ticker;

  public StoreCalls(IdempotencyStore store, OnceListener listener,
      java.util.function.LongSupplier ticker) {
    this.store = store;
    this.listener = listener;
    this.ticker = ticker;
  }

  /** These store calls, each also told as a store call of {@code call}. */
  public StoreCalls forCall(CallEvents call) {
    return call.quiet() ? this : new StoreCalls(store, call, ticker);
  }

  public Claim claim(ClaimRequest request) {
    return timed("claim", () -> store.claim(request));
  }

  /** {@link IdempotencyStore#claimFromMemory}: not a store call, so not timed or told. */
  Claim claimFromMemory(ClaimRequest request) {
    return store.claimFromMemory(request);
  }

  /**
   * {@link IdempotencyStore#claimAsync}, not yet told: the caller tells it with {@link #told}
   * where it goes on from the answer (on its executor), so that the listener never hears of a
   * store call on the thread that asked, which may be an event loop, nor on a client's thread
   * that completed the stage.
   */
  java.util.concurrent.CompletionStage<Claim> claimAsync(ClaimRequest request,
      java.util.concurrent.Executor blocking) {
    return store.claimAsync(request, blocking);
  }

  /**
   * {@link IdempotencyStore#completeAsync}, not yet told: as {@link #claimAsync}, the caller tells
   * it with {@link #told} where it goes on from the answer.
   */
  java.util.concurrent.CompletionStage<Void> completeAsync(IdempotencyKey key, long token,
      Outcome outcome, Instant now, Duration retention, java.util.concurrent.Executor blocking) {
    return store.completeAsync(key, token, outcome, now, retention, blocking);
  }

  /** The ticker's time, for {@link #told} (0 when nobody listens). */
  long start() {
    return listener == NoListener.INSTANCE ? 0 : ticker.getAsLong();
  }

  /** Tells an asynchronous store call ({@code "claim"}, {@code "complete"}) made at {@code start}. */
  void told(String operation, long start, boolean succeeded) {
    if (listener == NoListener.INSTANCE) {
      return;
    }
    Duration elapsed = Duration.ofNanos(ticker.getAsLong() - start);
    Execution.notify(listener, l -> l.onStoreCall(operation, elapsed, succeeded));
  }

  public void complete(IdempotencyKey key, long token, Outcome outcome, Instant now,
      Duration retention) {
    timed("complete", () -> {
      store.complete(key, token, outcome, now, retention);
      return null;
    });
  }

  public void fail(IdempotencyKey key, long token, String error, Instant now,
      Duration retention) {
    timed("fail", () -> {
      store.fail(key, token, error, now, retention);
      return null;
    });
  }

  public void release(IdempotencyKey key, long token, String reason, Instant now,
      Duration retention) {
    timed("release", () -> {
      store.release(key, token, reason, now, retention);
      return null;
    });
  }

  /**
   * Gives back a claim whose work never ran ({@link #release}), best effort: one that fails is
   * logged and left to its lease, after which the next claim takes the key over.
   */
  public void releaseOrLeave(IdempotencyKey key, long token, String why, Instant now,
      Duration retention) {
    try {
      release(key, token, why.length() > 1000 ? why.substring(0, 1000) : why, now, retention);
    } catch (RuntimeException e) {
      System.getLogger(StoreCalls.class.getName()).log(System.Logger.Level.DEBUG,
          "could not give back " + key + "; its lease runs out instead", e);
    }
  }

  public java.util.Set<IdempotencyKey> extendAll(java.util.List<dev.once.spi.HeldClaim> claims,
      Instant now, Duration lease) {
    return timed("extendAll", () -> store.extendAll(claims, now, lease));
  }

  public Instant extend(IdempotencyKey key, long token, Instant now, Duration lease) {
    return timed("extend", () -> store.extend(key, token, now, lease));
  }

  public void checkpoint(IdempotencyKey key, long token, Checkpoint checkpoint, Instant now) {
    timed("checkpoint", () -> {
      store.checkpoint(key, token, checkpoint, now);
      return null;
    });
  }

  public java.util.List<Claim> claimAll(java.util.List<ClaimRequest> requests) {
    return claimAll(requests, java.util.List.of());
  }

  /** One {@code claimAll}, also told as a store call of each of {@code calls}. */
  public java.util.List<Claim> claimAll(java.util.List<ClaimRequest> requests,
      java.util.Collection<CallEvents> calls) {
    return timed("claimAll", calls, () -> store.claimAll(requests));
  }

  /** {@link IdempotencyStore#claimAll(java.util.List, Duration)}: gives up on a held row. */
  public java.util.List<Claim> claimAll(java.util.List<ClaimRequest> requests,
      Duration lockWait) {
    return timed("claimAll", () -> store.claimAll(requests, lockWait));
  }

  public java.util.Set<IdempotencyKey> completeAll(
      java.util.List<dev.once.spi.Completion> completions, Instant now, Duration retention) {
    return completeAll(completions, now, retention, java.util.List.of());
  }

  /** One {@code completeAll}, also told as a store call of each of {@code calls}. */
  public java.util.Set<IdempotencyKey> completeAll(
      java.util.List<dev.once.spi.Completion> completions, Instant now, Duration retention,
      java.util.Collection<CallEvents> calls) {
    return timed("completeAll", calls, () -> store.completeAll(completions, now, retention));
  }

  /**
   * {@link IdempotencyStore#completeAll(java.util.List, Instant, Duration, Duration)}: gives up
   * on a held row.
   */
  public java.util.Set<IdempotencyKey> completeAll(
      java.util.List<dev.once.spi.Completion> completions, Instant now, Duration retention,
      Duration lockWait) {
    return timed("completeAll",
        () -> store.completeAll(completions, now, retention, lockWait));
  }

  private <R> R timed(String operation, Supplier<R> call) {
    return timed(operation, java.util.List.of(), call);
  }

  private <R> R timed(String operation, java.util.Collection<CallEvents> calls,
      Supplier<R> call) {
    if (listener == NoListener.INSTANCE) {
      return call.get();
    }
    long start = ticker.getAsLong();
    boolean ok = false;
    try {
      R result = call.get();
      ok = true;
      return result;
    } finally {
      boolean succeeded = ok;
      Duration elapsed = Duration.ofNanos(ticker.getAsLong() - start);
      Execution.notify(listener, l -> l.onStoreCall(operation, elapsed, succeeded));
      for (CallEvents shared : calls) {
        shared.sharedStoreCall(operation, elapsed, succeeded);
      }
    }
  }
}
