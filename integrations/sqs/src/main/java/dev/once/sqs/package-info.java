/**
 * An idempotent Amazon SQS consumer on top of Once: one batch claim per receive (or gathered
 * receives), delete only after the outcome is stored, visibility extended while the work runs,
 * retries as visibility backoff, and an optional dead-letter queue. Start with
 * {@link dev.once.sqs.IdempotentSqsConsumer}.
 */
package dev.once.sqs;
