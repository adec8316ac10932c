package dev.once.internal;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.OnceListener.Call;
import dev.once.OnceListener.CallOutcome;
import dev.once.spi.Claim;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The listener as one call sees it: tells {@link OnceListener#onCallStarted} when made, and as an
 * {@link OnceListener} itself passes every event on and tells the call-scoped events that follow
 * from it: a store call is also told for this call, and the event that decides the call
 * ({@code onCompleted}, {@code onFailed}, {@code onReplayed}, …) also ends it
 * ({@link OnceListener#onCallEnded}, once). The engine tells the events of one call through its
 * {@code CallEvents} (and gives it to the call's {@link StoreCalls#forCall}); a heartbeat tells the
 * raw listener, so a lease it finds lost does not end the call. Public for the engines of other
 * modules; not API.
 */
public final class CallEvents implements OnceListener {

  private final OnceListener listener;
  private final LongSupplier ticker;
  private final boolean quiet;
  private final long started;
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile Call call;
  private volatile boolean notStored;

  private CallEvents(OnceListener listener, LongSupplier ticker, IdempotencyKey key) {
    this.listener = listener;
    this.ticker = ticker;
    this.quiet = listener == null || listener == NoListener.INSTANCE;
    this.started = quiet ? 0 : ticker.getAsLong();
    this.call = Call.of(key);
  }

  /** A call of {@code key} starts: tells {@link OnceListener#onCallStarted}. */
  public static CallEvents start(OnceListener listener, LongSupplier ticker, IdempotencyKey key) {
    CallEvents events = new CallEvents(listener, ticker, key);
    if (!events.quiet) {
      events.pass(l -> l.onCallStarted(events.call));
    }
    return events;
  }

  /** The call, with its token and attempt once acquired. */
  public Call call() {
    return call;
  }

  /** Whether no listener hears: nothing to time nor tell. */
  boolean quiet() {
    return quiet;
  }

  /** Whether the call has ended. */
  public boolean ended() {
    return ended.get();
  }

  /**
   * Tells one of the listener's events ({@code onCompleted}, {@code onFailed}, …) through this
   * call's view of it, guarded: the events that decide the call also end it.
   */
  public void tell(Consumer<OnceListener> event) {
    if (!quiet) {
      Execution.notify(this, event);
    }
  }

  /** The claim is held: {@link #onAcquired} and {@link OnceListener#onCallAcquired}. */
  public void acquired(Claim.Acquired acquired) {
    IdempotencyKey key = call.key();
    call = call.holding(acquired.token(), acquired.attempt());
    Call now = call;
    if (!quiet) {
      pass(l -> l.onAcquired(key, acquired.token(), acquired.takeover()));
      pass(l -> l.onCallAcquired(now, acquired.takeover()));
    }
  }

  /** A store call shared with other calls (told unscoped once, by whoever made it). */
  public void sharedStoreCall(String operation, Duration elapsed, boolean succeeded) {
    if (!quiet && !ended.get()) {
      Call now = call;
      Execution.notify(listener, l -> l.onStoreCall(now, operation, elapsed, succeeded));
    }
  }

  /** Ends the call with {@code outcome} unless it has ended already. */
  public void end(CallOutcome outcome, Throwable failure) {
    if (quiet || !ended.compareAndSet(false, true)) {
      return;
    }
    Call now = call;
    Duration elapsed = Duration.ofNanos(ticker.getAsLong() - started);
    Execution.notify(listener, l -> l.onCallEnded(now, outcome, elapsed, failure));
  }

  /** The nanoseconds of the ticker now, for the elapsed times of the old events. */
  public long now() {
    return ticker.getAsLong();
  }

  // The listener's events, passed on (each guarded: one that throws still ends the call); those
  // that decide the call end it.

  private void pass(Consumer<OnceListener> event) {
    Execution.notify(listener, event);
  }

  @Override
  public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
    pass(l -> l.onAcquired(key, token, takeover));
  }

  @Override
  public void onReplayed(IdempotencyKey key) {
    pass(l -> l.onReplayed(key));
    end(CallOutcome.REPLAYED, null);
  }

  @Override
  public void onInProgress(IdempotencyKey key) {
    pass(l -> l.onInProgress(key));
    end(CallOutcome.IN_PROGRESS, null);
  }

  @Override
  public void onMismatch(IdempotencyKey key) {
    pass(l -> l.onMismatch(key));
    end(CallOutcome.MISMATCH, null);
  }

  @Override
  public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
    pass(l -> l.onCompleted(key, token, elapsed));
    end(notStored ? CallOutcome.NOT_STORED : CallOutcome.COMPLETED, null);
  }

  @Override
  public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
    pass(l -> l.onFailed(key, token, failure, terminal));
    end(terminal ? CallOutcome.FAILED_TERMINAL : CallOutcome.FAILED, failure);
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    pass(l -> l.onLeaseLost(key, token));
    end(CallOutcome.LEASE_LOST, null);
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    notStored = true;
    pass(l -> l.onOutcomeNotStored(key, token, cause));
  }

  @Override
  public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
    pass(l -> l.onHeartbeatFailed(key, token, error));
  }

  @Override
  public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
    pass(l -> l.onOutcomeUnknown(key, token, storeFailure));
    end(CallOutcome.OUTCOME_UNKNOWN, storeFailure);
  }

  @Override
  public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
    pass(l -> l.onStoreCall(operation, elapsed, succeeded));
    sharedStoreCall(operation, elapsed, succeeded);
  }

  @Override
  public String toString() {
    return "CallEvents[" + call + "]";
  }
}
