/**
 * HTTP idempotency per the IETF {@code Idempotency-Key} header draft: {@link
 * dev.once.servlet.IdempotencyFilter} (a Jakarta Servlet filter over a {@link dev.once.Once}) and
 * {@link dev.once.servlet.TenantResolver}. Its problem types are {@link
 * dev.once.http.IdempotencyProblem} ({@code once-http}, shared with {@code once-jaxrs}). Everything
 * in {@code dev.once.servlet.internal} is implementation.
 */
package dev.once.servlet;
