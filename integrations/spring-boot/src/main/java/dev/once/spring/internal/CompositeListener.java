package dev.once.spring.internal;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import java.time.Duration;
import java.util.List;

/**
 * Several {@link OnceListener} beans as the one listener a {@code Once} takes. Once already isolates
 * a throwing listener; here each listener is isolated from the others too.
 */
public final class CompositeListener implements OnceListener {

  private static final System.Logger LOG = System.getLogger(CompositeListener.class.getName());

  private final List<OnceListener> listeners;

  private CompositeListener(List<OnceListener> listeners) {
    this.listeners = List.copyOf(listeners);
  }

  /** The one listener standing for {@code listeners}: itself if there is one, a no-op if none. */
  public static OnceListener of(List<OnceListener> listeners) {
    if (listeners.size() == 1) {
      return listeners.get(0);
    }
    return new CompositeListener(listeners);
  }

  private void each(java.util.function.Consumer<OnceListener> event) {
    for (OnceListener listener : listeners) {
      try {
        event.accept(listener);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "OnceListener " + listener + " failed", e);
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
  public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
    each(l -> l.onStoreCall(operation, elapsed, succeeded));
  }

  @Override
  public String toString() {
    return "CompositeListener" + listeners;
  }
}
