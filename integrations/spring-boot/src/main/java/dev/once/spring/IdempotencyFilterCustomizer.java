package dev.once.spring;

import dev.once.servlet.IdempotencyFilter;

/**
 * Adjusts the {@link IdempotencyFilter.Builder} after the {@code once.http.*} properties were
 * applied. Declare it as a bean; several are applied in their {@code @Order}.
 *
 * <pre>{@code
 * @Bean
 * IdempotencyFilterCustomizer tenantFromJwt() {
 *   return filter -> filter.tenantResolver(request -> tenantOf(request));
 * }
 * }</pre>
 */
@FunctionalInterface
public interface IdempotencyFilterCustomizer {

  /** Changes {@code builder} in place. */
  void customize(IdempotencyFilter.Builder builder);
}
