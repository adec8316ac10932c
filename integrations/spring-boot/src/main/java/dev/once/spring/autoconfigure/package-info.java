/**
 * The auto-configuration of the Once Spring Boot starter: {@link
 * dev.once.spring.autoconfigure.OnceAutoConfiguration}, and for the consumer adapters {@link
 * dev.once.spring.autoconfigure.OnceKafkaAutoConfiguration} and {@link
 * dev.once.spring.autoconfigure.OnceRabbitAutoConfiguration}.
 */
package dev.once.spring.autoconfigure;
