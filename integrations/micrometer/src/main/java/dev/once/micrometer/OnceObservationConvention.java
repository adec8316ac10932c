package dev.once.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names an {@link OnceObservationContext} and its key values; implement it (or extend
 * {@link DefaultOnceObservationConvention}) to add, rename or drop some, and hand it to
 * {@link ObservationOnceListener.Builder#convention}.
 */
public interface OnceObservationConvention extends ObservationConvention<OnceObservationContext> {

  @Override
  default boolean supportsContext(Observation.Context context) {
    return context instanceof OnceObservationContext;
  }
}
