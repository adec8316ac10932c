/**
 * An idempotent Kafka consumer on top of Once: batch claims per poll, commit discipline, retries
 * and a dead-letter topic. Start with {@link dev.once.kafka.IdempotentConsumer}.
 */
package dev.once.kafka;
