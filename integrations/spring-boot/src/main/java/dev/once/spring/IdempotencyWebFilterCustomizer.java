package dev.once.spring;

import dev.once.webflux.IdempotencyWebFilter;

/**
 * Adjusts the {@link IdempotencyWebFilter.Builder} of a reactive web application after the
 * {@code once.http.*} properties were applied: the counterpart of
 * {@link IdempotencyFilterCustomizer}. Declare it as a bean; several are applied in their
 * {@code @Order}.
 *
 * <pre>{@code
 * @Bean
 * IdempotencyWebFilterCustomizer tenantFromJwt() {
 *   return filter -> filter.tenantResolver(exchange -> exchange.getPrincipal()
 *       .map(principal -> tenantOf(principal)));
 * }
 * }</pre>
 */
@FunctionalInterface
public interface IdempotencyWebFilterCustomizer {

  /** Changes {@code builder} in place. */
  void customize(IdempotencyWebFilter.Builder builder);
}
