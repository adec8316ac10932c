/**
 * An idempotent NATS JetStream pull consumer on Once's batch engine ({@code dev.once.batch}):
 * each fetch of a durable pull consumer is claimed with one {@code claimAll}; a message is acked
 * only once its outcome is stored, kept from redelivery with in-progress acks while its batch
 * runs, redelivered with {@code nakWithDelay} when it is not final, and published to a dead-letter
 * subject (then terminated) when given up on. Start with {@link dev.once.nats.IdempotentNatsConsumer}.
 */
package dev.once.nats;
