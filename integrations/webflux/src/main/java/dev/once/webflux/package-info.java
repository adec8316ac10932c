/**
 * HTTP idempotency per the IETF {@code Idempotency-Key} header draft for Spring WebFlux:
 * {@link dev.once.webflux.IdempotencyWebFilter} (a non-blocking {@code WebFilter} over a
 * {@link dev.once.Once}, with the servlet filter's HTTP contract) and
 * {@link dev.once.webflux.TenantResolver}. Its problem types are
 * {@link dev.once.http.IdempotencyProblem} ({@code once-http}, shared with the other HTTP adapters).
 * Everything in {@code dev.once.webflux.internal} is implementation.
 */
package dev.once.webflux;
