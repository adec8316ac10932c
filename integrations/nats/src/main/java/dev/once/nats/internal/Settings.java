package dev.once.nats.internal;

import dev.once.Fingerprint;
import dev.once.batch.BatchConfig;
import dev.once.batch.MessageHandler;
import io.nats.client.Connection;
import io.nats.client.Message;
import java.time.Duration;
import java.util.function.Function;

/**
 * The settings of one {@code IdempotentNatsConsumer}, fixed when it is built. Not API.
 *
 * @param keys           the builder's {@code KeyDerivation}, as a function (this package does not
 *                       depend back on the public one)
 * @param inProgressAcks false only in tests that show what in-progress acks prevent
 */
public record Settings(MessageHandler<Message> handler, Connection connection, String stream,
    String consumer, String scope, Function<Message, String> keys,
    Function<Message, Fingerprint> fingerprint, Function<Message, String> deadLetterSubject,
    BatchConfig config, int batchSize, Duration fetchTimeout, boolean inProgressAcks) {}
