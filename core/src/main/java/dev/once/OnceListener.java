package dev.once;

import java.time.Duration;

/**
 * Observes what Once does, for metrics and logs. Every method has a no-op default; an exception
 * thrown by a listener is logged and otherwise ignored.
 */
public interface OnceListener {

  /**
   * One listener telling each of {@code listeners} in order; one that throws does not stop the
   * others from being told. For a metrics listener next to a logging one, since
   * {@code Once.Builder.listener} takes one.
   */
  static OnceListener compose(OnceListener... listeners) {
    java.util.List<OnceListener> all = java.util.List.of(listeners); // rejects null
    if (all.size() == 1) {
      return all.get(0);
    }
    return new CompositeListener(all);
  }

  /**
   * {@code listener}, each of its calls guarded: whatever it throws (an {@code Error} included,
   * such as a class missing from a metrics library) is logged and ignored, so a listener can never
   * decide whether work runs again. For engines of other modules that tell a user's listener.
   */
  static OnceListener guarded(OnceListener listener) {
    java.util.Objects.requireNonNull(listener, "listener");
    if (listener instanceof CompositeListener) {
      return listener;
    }
    return new CompositeListener(java.util.List.of(listener));
  }

  /** The claim was acquired; {@code takeover} when a previous holder's lease had passed. */
  default void onAcquired(IdempotencyKey key, long token, boolean takeover) {}

  /** A duplicate was answered from the stored outcome. */
  default void onReplayed(IdempotencyKey key) {}

  /** A duplicate found the original in progress and was rejected. */
  default void onInProgress(IdempotencyKey key) {}

  /** The key was reused with another fingerprint. */
  default void onMismatch(IdempotencyKey key) {}

  /** The logic succeeded and its outcome was stored; {@code elapsed} covers the logic and the write. */
  default void onCompleted(IdempotencyKey key, long token, Duration elapsed) {}

  /** The logic failed; {@code terminal} when the failure was stored for replay. */
  default void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {}

  /** A write under {@code token} was refused because another worker took over. */
  default void onLeaseLost(IdempotencyKey key, long token) {}

  /**
   * The work ran and succeeded but its result could not be stored ({@code cause}: too large, or
   * the codec failed); the key was completed with a marker instead, so it never runs again and
   * duplicates get {@link OutcomeNotStoredException}.
   */
  default void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {}

  /**
   * A heartbeat could not extend the lease of running work ({@code error}: the store was down, or
   * anything unexpected). Beats go on until the work ends or the lease is found lost; a lost lease
   * is told by {@link #onLeaseLost}.
   */
  default void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {}

  /**
   * Storing the outcome of work that ran (a value, a terminal failure, or a retryable failure's
   * release) failed, also when tried again: whether it is stored is unknown (see
   * {@link OutcomeUnknownException}). The key stays in progress until its lease passes unless it
   * was stored.
   */
  default void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {}

  /** One store call ({@code claim}, {@code complete}, {@code fail}, …) and how long it took. */
  default void onStoreCall(String operation, Duration elapsed, boolean succeeded) {}
}
