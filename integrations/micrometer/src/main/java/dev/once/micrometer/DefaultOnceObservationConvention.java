package dev.once.micrometer;

import io.micrometer.common.KeyValues;

/**
 * The names {@link ObservationOnceListener} uses unless given another convention: name
 * {@value OnceObservations#EXECUTION}, contextual name (the span's) {@code once <scope>}, low
 * cardinality {@value OnceObservations#SCOPE}, {@value OnceObservations#STORE},
 * {@value OnceObservations#OUTCOME}, high cardinality {@value OnceObservations#KEY} and, for an
 * execution, {@value OnceObservations#TOKEN}. The tenant is left out: add it in a subclass if your
 * tenants may appear in traces.
 */
public class DefaultOnceObservationConvention implements OnceObservationConvention {

  private final boolean scopeTag;

  /** With the scope as a key value. */
  public DefaultOnceObservationConvention() {
    this(true);
  }

  /**
   * {@code scopeTag} false puts {@code all} instead of the scope (as
   * {@link MicrometerOnceListener.Builder#scopeTag} does), for when scopes are many and the
   * observation's timers would have too many series.
   */
  public DefaultOnceObservationConvention(boolean scopeTag) {
    this.scopeTag = scopeTag;
  }

  @Override
  public String getName() {
    return OnceObservations.EXECUTION;
  }

  @Override
  public String getContextualName(OnceObservationContext context) {
    return "once " + context.key().scope();
  }

  @Override
  public KeyValues getLowCardinalityKeyValues(OnceObservationContext context) {
    return KeyValues.of(
        OnceObservations.SCOPE, scopeTag ? context.key().scope() : "all",
        OnceObservations.STORE, context.store(),
        OnceObservations.OUTCOME, context.outcome());
  }

  @Override
  public KeyValues getHighCardinalityKeyValues(OnceObservationContext context) {
    KeyValues values = KeyValues.of(OnceObservations.KEY, context.key().key());
    return context.token() < 0 ? values
        : values.and(OnceObservations.TOKEN, Long.toString(context.token()));
  }
}
