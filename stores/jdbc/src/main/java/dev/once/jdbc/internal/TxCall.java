package dev.once.jdbc.internal;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.OnceListener.Call;
import dev.once.OnceListener.CallOutcome;
import dev.once.spi.Claim;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * The listener as one {@code TransactionalOnce} call sees it, as core's engine tells it: tells
 * {@link OnceListener#onCallStarted} when made, and as an {@link OnceListener} passes every event
 * on and tells the call-scoped events that follow from it (a store call is also this call's; the
 * event that decides the call also ends it, once, after every other event of the call: the same
 * events as core's, {@code onFailed} excepted, after which the failure is settled and the engine
 * ends the call ({@link #endFailure})). The listener it wraps is guarded
 * ({@link OnceListener#guarded}), so a throwing one never fails the call.
 */
final class TxCall implements OnceListener {

  /** Guarded, or null for none. */
  private final OnceListener listener;
  private final LongSupplier ticker;
  private final long started;
  private Call call;
  private boolean notStored;
  private boolean ended;
  /** The failure told by {@code onFailed}, and whether terminal. */
  private Throwable failed;
  private boolean failedTerminal;

  private TxCall(OnceListener listener, LongSupplier ticker, IdempotencyKey key) {
    this.listener = listener;
    this.ticker = ticker;
    this.started = listener == null ? 0 : ticker.getAsLong();
    this.call = Call.of(key);
  }

  /** A call of {@code key} starts; {@code listener} guarded, or null. */
  static TxCall start(OnceListener listener, LongSupplier ticker, IdempotencyKey key) {
    TxCall events = new TxCall(listener, ticker, key);
    if (listener != null) {
      listener.onCallStarted(events.call);
    }
    return events;
  }

  /** Whether the call holds (or held) the claim. */
  boolean acquired() {
    return call.acquired();
  }

  /** The claim is held: {@link #onAcquired} and {@link OnceListener#onCallAcquired}. */
  void acquired(Claim.Acquired acquired) {
    call = call.holding(acquired.token(), acquired.attempt());
    if (listener != null) {
      listener.onAcquired(call.key(), acquired.token(), acquired.takeover());
      listener.onCallAcquired(call, acquired.takeover(),
          Duration.ofNanos(ticker.getAsLong() - started));
    }
  }

  /** Ends the call with {@code outcome} unless it has ended already. */
  void end(CallOutcome outcome, Throwable failure) {
    if (listener == null || ended) {
      return;
    }
    ended = true;
    listener.onCallEnded(call, outcome, Duration.ofNanos(ticker.getAsLong() - started), failure);
  }

  /**
   * Ends a call whose work failed, once its failure is settled: {@code FAILED} or
   * {@code FAILED_TERMINAL} as {@code onFailed} said, unless it ended already.
   */
  void endFailure() {
    if (failed != null) {
      end(failedTerminal ? CallOutcome.FAILED_TERMINAL : CallOutcome.FAILED, failed);
    }
  }

  // The listener's events, passed on; those that decide the call end it.

  @Override
  public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
    if (listener != null) {
      listener.onAcquired(key, token, takeover);
    }
  }

  @Override
  public void onReplayed(IdempotencyKey key) {
    if (listener != null) {
      listener.onReplayed(key);
    }
    end(CallOutcome.REPLAYED, null);
  }

  @Override
  public void onInProgress(IdempotencyKey key) {
    if (listener != null) {
      listener.onInProgress(key);
    }
    end(CallOutcome.IN_PROGRESS, null);
  }

  @Override
  public void onMismatch(IdempotencyKey key) {
    if (listener != null) {
      listener.onMismatch(key);
    }
    end(CallOutcome.MISMATCH, null);
  }

  @Override
  public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
    if (listener != null) {
      listener.onCompleted(key, token, elapsed);
    }
    end(notStored ? CallOutcome.NOT_STORED : CallOutcome.COMPLETED, null);
  }

  @Override
  public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
    if (listener != null) {
      listener.onFailed(key, token, failure, terminal);
    }
    // Not the end: the failure is settled after (stored, or rolled back); endFailure ends it.
    failed = failure;
    failedTerminal = terminal;
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    if (listener != null) {
      listener.onLeaseLost(key, token);
    }
    end(CallOutcome.LEASE_LOST, null);
  }

  @Override
  public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
    if (listener != null) {
      listener.onOutcomeUnknown(key, token, storeFailure);
    }
    end(CallOutcome.OUTCOME_UNKNOWN, storeFailure);
  }

  @Override
  public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
    if (listener != null) {
      listener.onHeartbeatFailed(key, token, error);
    }
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    notStored = true;
    if (listener != null) {
      listener.onOutcomeNotStored(key, token, cause);
    }
  }

  @Override
  public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
    if (listener != null) {
      listener.onStoreCall(operation, elapsed, succeeded);
      if (!ended && failed == null) { // writing a failure down is not the call's store call
        listener.onStoreCall(call, operation, elapsed, succeeded);
      }
    }
  }
}
