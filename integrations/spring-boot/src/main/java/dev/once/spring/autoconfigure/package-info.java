/**
 * The auto-configuration of the Once Spring Boot starter: {@link
 * dev.once.spring.autoconfigure.OnceAutoConfiguration}.
 */
package dev.once.spring.autoconfigure;
