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
 * ({@code onCompleted}, {@code onReplayed}, {@code onLeaseLost}, {@code onOutcomeUnknown}, …)
 * also ends it ({@link OnceListener#onCallEnded}, once, after every other event of the call).
 * {@code onFailed} does not: the failure is settled after it (compensated, stored or released),
 * and the engine ends the call then ({@link #endFailure}), as what the settling came to says.
 * The engine tells the events of one call through its {@code CallEvents} (and gives it to the
 * call's {@link StoreCalls#forCall}); a heartbeat tells the raw listener, so a lease it finds lost
 * does not end the call. When nothing listens, every call shares {@link #QUIET}, which allocates
 * and tells nothing. Public only as what {@link Engine#startCall} hands the engines of other
 * modules of this project; not API.
 */
public final class CallEvents implements OnceListener {

  /** The events of every call when nothing listens: tells nothing, keeps nothing. */
  private static final CallEvents QUIET = new CallEvents();

  private final OnceListener listener;
  private final LongSupplier ticker;
  private final boolean quiet;
  private final long started;
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile Call call;
  private volatile boolean notStored;
  /** The failure told by {@code onFailed}, and whether terminal, until the call ends. */
  private volatile Throwable failed;
  private volatile boolean failedTerminal;

  private CallEvents() {
    this.listener = NoListener.INSTANCE;
    this.ticker = null;
    this.quiet = true;
    this.started = 0;
    this.call = null;
  }

  private CallEvents(OnceListener listener, LongSupplier ticker, IdempotencyKey key) {
    this.listener = listener;
    this.ticker = ticker;
    this.quiet = false;
    this.started = ticker.getAsLong();
    this.call = Call.of(key);
  }

  /** A call of {@code key} starts: tells {@link OnceListener#onCallStarted}. */
  static CallEvents start(OnceListener listener, LongSupplier ticker, IdempotencyKey key) {
    if (listener == null || listener == NoListener.INSTANCE) {
      return QUIET;
    }
    CallEvents events = new CallEvents(listener, ticker, key);
    events.pass(l -> l.onCallStarted(events.call));
    return events;
  }

  /** The call, with its token and attempt once acquired; null when {@link #quiet}. */
  public Call call() {
    return call;
  }

  /** Whether the call holds (has held) its claim; false when {@link #quiet}. */
  public boolean holdsClaim() {
    return !quiet && call.acquired();
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
    if (quiet) {
      return;
    }
    IdempotencyKey key = call.key();
    call = call.holding(acquired.token(), acquired.attempt());
    Call now = call;
    Duration elapsed = Duration.ofNanos(ticker.getAsLong() - started);
    pass(l -> l.onAcquired(key, acquired.token(), acquired.takeover()));
    pass(l -> l.onCallAcquired(now, acquired.takeover(), elapsed));
  }

  /**
   * A store call shared with other calls (told unscoped once, by whoever made it). Not told as
   * this call's once it has ended, nor once its work has failed: writing the failure down is not
   * one of the call's store calls (as before the call ended after its settling).
   */
  public void sharedStoreCall(String operation, Duration elapsed, boolean succeeded) {
    if (!quiet && !ended.get() && failed == null) {
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

  /**
   * Ends a call whose work failed ({@code onFailed} told), once its failure is settled: unless
   * an event ended it already (a lost lease, an outcome unknown), {@code FAILED} or
   * {@code FAILED_TERMINAL} as {@code onFailed} said, with its failure. Nothing if no failure
   * was told.
   */
  public void endFailure() {
    Throwable failure = failed;
    if (failure != null) {
      end(failedTerminal ? CallOutcome.FAILED_TERMINAL : CallOutcome.FAILED, failure);
    }
  }

  /**
   * The nanoseconds of the ticker now, for the elapsed times of the old events (0 when
   * {@link #quiet}: nobody hears them).
   */
  public long now() {
    return quiet ? 0 : ticker.getAsLong();
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
    if (quiet) {
      return;
    }
    // Not the end: the failure is settled after (compensated, stored); endFailure ends it.
    failedTerminal = terminal;
    failed = failure;
    pass(l -> l.onFailed(key, token, failure, terminal));
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    pass(l -> l.onLeaseLost(key, token));
    end(CallOutcome.LEASE_LOST, null);
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    if (!quiet) {
      notStored = true;
      pass(l -> l.onOutcomeNotStored(key, token, cause));
    }
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
  public void onCoalescingDetour(CoalescingDetour detour, String operation, int calls) {
    pass(l -> l.onCoalescingDetour(detour, operation, calls));
  }

  @Override
  public String toString() {
    return "CallEvents[" + call + "]";
  }
}
