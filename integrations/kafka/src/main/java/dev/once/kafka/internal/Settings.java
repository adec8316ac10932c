package dev.once.kafka.internal;

import dev.once.Fingerprint;
import dev.once.kafka.DeadLetterPublisher;
import dev.once.kafka.KeyDerivation;
import dev.once.kafka.NoKeyPolicy;
import dev.once.kafka.RecordHandler;
import java.time.Duration;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** The settings of one {@code IdempotentConsumer}, fixed when it is built. Not API. */
public record Settings<K, V>(RecordHandler<K, V> handler, String scope, KeyDerivation<K, V> keys,
    Function<ConsumerRecord<K, V>, Fingerprint> fingerprint, NoKeyPolicy noKeyPolicy,
    DeadLetterPublisher<K, V> deadLetters, int maxAttempts, Duration initialBackoff,
    Duration maxBackoff, Duration inProgressBackoff, boolean batchClaims, Duration pollTimeout) {}
