/**
 * Micrometer for Once: {@link dev.once.micrometer.MicrometerOnceListener} records meters (names in
 * {@link dev.once.micrometer.OnceMetrics}); {@link dev.once.micrometer.ObservationOnceListener}
 * makes an observation of every call, a span with Micrometer Tracing (names in
 * {@link dev.once.micrometer.OnceObservations}, customised by an
 * {@link dev.once.micrometer.OnceObservationConvention}). Both are {@link dev.once.OnceListener}s.
 */
package dev.once.micrometer;
