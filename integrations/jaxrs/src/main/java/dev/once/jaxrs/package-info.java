/**
 * HTTP idempotency for Jakarta REST (JAX-RS) per the IETF {@code Idempotency-Key} header draft:
 * {@link dev.once.jaxrs.IdempotencyFeature} (request and response filters over a
 * {@link dev.once.Once}, with the servlet filter's HTTP contract) and
 * {@link dev.once.jaxrs.TenantResolver}. The problem types are
 * {@link dev.once.http.IdempotencyProblem} ({@code once-http}). Everything in
 * {@code dev.once.jaxrs.internal} is implementation.
 */
package dev.once.jaxrs;
