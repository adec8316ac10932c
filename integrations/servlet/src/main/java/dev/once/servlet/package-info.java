/**
 * HTTP idempotency per the IETF {@code Idempotency-Key} header draft: {@link
 * dev.once.servlet.IdempotencyFilter} (a Jakarta Servlet filter over a {@link dev.once.Once}),
 * {@link dev.once.servlet.TenantResolver} and the problem types of {@link
 * dev.once.servlet.IdempotencyProblem}. Everything in {@code dev.once.servlet.internal} is
 * implementation.
 */
package dev.once.servlet;
