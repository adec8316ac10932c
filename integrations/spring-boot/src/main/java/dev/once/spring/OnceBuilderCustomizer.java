package dev.once.spring;

import dev.once.Once;

/**
 * Adjusts the {@link Once.Builder} the auto-configuration builds the {@code Once} bean with, after
 * the {@code once.*} properties were applied: a failure policy, a clock, anything the properties
 * do not cover. Declare it as a bean; several are applied in their {@code @Order}.
 *
 * <pre>{@code
 * @Bean
 * OnceBuilderCustomizer terminalFailures() {
 *   return builder -> builder.failurePolicy(FailurePolicy.retryAll().terminalOn(CardDeclined.class));
 * }
 * }</pre>
 */
@FunctionalInterface
public interface OnceBuilderCustomizer {

  /** Changes {@code builder} in place. */
  void customize(Once.Builder builder);
}
