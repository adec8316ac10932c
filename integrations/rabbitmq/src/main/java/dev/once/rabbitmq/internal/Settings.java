package dev.once.rabbitmq.internal;

import com.rabbitmq.client.Delivery;
import dev.once.batch.DeadLetterPublisher;
import java.time.Duration;

/**
 * The settings of an idempotent consumer, fixed when it is built (the batch engine's own are in
 * its {@code BatchExecutor}). Not API.
 *
 * @param deadLetters a publisher of the user's, or null to publish to {@code deadLetterExchange}
 */
public record Settings(String queue, String scope, int prefetch, Duration linger,
    String deadLetterExchange, String deadLetterRoutingKey,
    DeadLetterPublisher<Delivery> deadLetters,
    Duration confirmTimeout, Duration closeTimeout, Duration initialBackoff) {}
