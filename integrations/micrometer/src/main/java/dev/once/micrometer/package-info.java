/**
 * Micrometer metrics for Once: {@link dev.once.micrometer.MicrometerOnceListener}, an {@link
 * dev.once.OnceListener}, and the meter names of {@link dev.once.micrometer.OnceMetrics}.
 */
package dev.once.micrometer;
