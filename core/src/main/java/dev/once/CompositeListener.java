package dev.once;

import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * {@link OnceListener#compose}: tells every listener, each failure logged apart. In the API's
 * package, so the API does not depend on the engine for it.
 */
final class CompositeListener implements OnceListener {

  /** The engine's logger, so a throwing listener is logged where it always was. */
  private static final System.Logger LOG = System.getLogger(Once.class.getName());

  private final List<OnceListener> listeners;

  CompositeListener(List<OnceListener> listeners) {
    this.listeners = List.copyOf(listeners);
  }

  private void each(Consumer<OnceListener> event) {
    for (OnceListener listener : listeners) {
      try {
        event.accept(listener);
      } catch (VirtualMachineError e) {
        throw e;
      } catch (Throwable e) {
        // An Error too (a missing class in a metrics library): a listener must never decide
        // whether the work runs again.
        LOG.log(System.Logger.Level.WARNING, "OnceListener threw; ignored", e);
      }
    }
  }

  @Override
  public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
    each(l -> l.onAcquired(key, token, takeover));
  }

  @Override
  public void onReplayed(IdempotencyKey key) {
    each(l -> l.onReplayed(key));
  }

  @Override
  public void onInProgress(IdempotencyKey key) {
    each(l -> l.onInProgress(key));
  }

  @Override
  public void onMismatch(IdempotencyKey key) {
    each(l -> l.onMismatch(key));
  }

  @Override
  public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
    each(l -> l.onCompleted(key, token, elapsed));
  }

  @Override
  public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
    each(l -> l.onFailed(key, token, failure, terminal));
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    each(l -> l.onLeaseLost(key, token));
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    each(l -> l.onOutcomeNotStored(key, token, cause));
  }

  @Override
  public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
    each(l -> l.onHeartbeatFailed(key, token, error));
  }

  @Override
  public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
    each(l -> l.onOutcomeUnknown(key, token, storeFailure));
  }

  @Override
  public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
    each(l -> l.onStoreCall(operation, elapsed, succeeded));
  }

  @Override
  public void onCoalescingDetour(CoalescingDetour detour, String operation, int calls) {
    each(l -> l.onCoalescingDetour(detour, operation, calls));
  }

  @Override
  public void onCallStarted(Call call) {
    each(l -> l.onCallStarted(call));
  }

  @Override
  public void onStoreCall(Call call, String operation, Duration elapsed, boolean succeeded) {
    each(l -> l.onStoreCall(call, operation, elapsed, succeeded));
  }

  @Override
  public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
    each(l -> l.onCallAcquired(call, takeover, elapsed));
  }

  @Override
  public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
    each(l -> l.onCallEnded(call, outcome, elapsed, failure));
  }
}
