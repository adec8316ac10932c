/**
 * The batch-execution engine every consumer adapter of Once runs on (Kafka, RabbitMQ, SQS, NATS):
 * one store call claims a batch of messages, each acquired message is handled in order under a
 * live lease (one heartbeat covers the whole batch, the messages waiting their turn included), one
 * store call stores the outcomes, and each message's {@link dev.once.batch.ItemResult} tells the
 * adapter what to do with it: acknowledge it (final), or have it delivered again (not final).
 *
 * <p>An adapter only maps: broker message → {@link dev.once.batch.BatchExecutor#process}; each
 * {@link dev.once.batch.ItemResult.Status} → ack, nack with a delay, or (after the engine published
 * a {@link dev.once.batch.DeadLetter}) ack. The guarantees live here, once, for every broker.
 */
package dev.once.batch;
