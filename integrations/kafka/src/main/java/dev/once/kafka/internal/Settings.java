package dev.once.kafka.internal;

import java.time.Duration;

/**
 * The Kafka settings of one {@code IdempotentConsumer}, fixed when it is built. Not API.
 *
 * @param scope       the scope of the keys, or null for the consumer group id
 * @param pollTimeout how long the loop's poll blocks at most
 */
public record Settings(String scope, Duration pollTimeout) {}
