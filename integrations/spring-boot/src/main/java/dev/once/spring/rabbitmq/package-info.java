/**
 * Spring AMQP listeners made idempotent by once-rabbitmq, for the starter's auto-configuration:
 * {@link dev.once.spring.rabbitmq.OnceRabbitListeners} and the {@code once.rabbitmq.*}
 * {@link dev.once.spring.rabbitmq.OnceRabbitProperties}. Needs once-rabbitmq and spring-rabbit.
 */
package dev.once.spring.rabbitmq;
