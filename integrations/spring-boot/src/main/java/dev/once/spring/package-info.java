/**
 * Spring Boot support for Once: the {@code once.*} {@link dev.once.spring.OnceProperties}, the
 * {@link dev.once.spring.Idempotent} annotation for bean methods, the
 * {@link dev.once.spring.IdempotentExceptionHandler} answering Once's exceptions as problem+json,
 * and customizers for the beans the auto-configuration makes ({@code dev.once.spring.autoconfigure}).
 */
package dev.once.spring;
