package dev.once.micrometer;

import dev.once.IdempotencyKey;
import io.micrometer.observation.Observation;
import java.util.Objects;

/**
 * What an {@link OnceObservationConvention} sees of one call: its key, the fencing token (or
 * {@code -1} for a duplicate, which holds none), the store's name and the outcome, which changes
 * while an execution runs ({@code acquired} or {@code takeover}) to how it ended.
 */
public final class OnceObservationContext extends Observation.Context {

  private final IdempotencyKey key;
  private final long token;
  private final String store;
  private volatile String outcome;

  /** The context of a call for {@code key}; {@code token} -1 when it holds no claim. */
  public OnceObservationContext(IdempotencyKey key, long token, String store, String outcome) {
    this.key = Objects.requireNonNull(key, "key");
    this.token = token;
    this.store = Objects.requireNonNull(store, "store");
    this.outcome = Objects.requireNonNull(outcome, "outcome");
  }

  /** The call's key. */
  public IdempotencyKey key() {
    return key;
  }

  /** The fencing token the work runs under, or -1 for a duplicate's answer. */
  public long token() {
    return token;
  }

  /** The store's name, as in the metrics' {@code store} tag. */
  public String store() {
    return store;
  }

  /** The outcome so far: one of the {@link OnceObservations} outcome values. */
  public String outcome() {
    return outcome;
  }

  void outcome(String outcome) {
    this.outcome = outcome;
  }
}
