/**
 * An idempotent RabbitMQ consumer on top of Once's batch engine: manual acknowledgements sent only
 * after the outcome is stored, prefetch-sized batches claimed with one store call, bounded retries
 * with backoff, and a dead-letter exchange published with publisher confirms. Start with
 * {@link dev.once.rabbitmq.IdempotentRabbitConsumer}; for Spring AMQP listener containers, see
 * {@code dev.once.rabbitmq.spring}.
 */
package dev.once.rabbitmq;
