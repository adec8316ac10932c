/**
 * An adapter for Spring AMQP listener containers ({@code SimpleMessageListenerContainer} in
 * {@code AcknowledgeMode.MANUAL}). Optional: needs {@code spring-rabbit} on the class path.
 */
package dev.once.rabbitmq.spring;
