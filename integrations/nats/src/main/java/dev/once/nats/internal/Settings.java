package dev.once.nats.internal;

import dev.once.Fingerprint;
import dev.once.batch.BatchConfig;
import dev.once.batch.MessageHandler;
import dev.once.nats.KeyDerivation;
import io.nats.client.Connection;
import io.nats.client.Message;
import java.time.Duration;
import java.util.function.Function;

/**
 * The settings of one {@code IdempotentNatsConsumer}, fixed when it is built. Not API.
 *
 * @param inProgressAcks false only in tests that show what in-progress acks prevent
 */
public record Settings(MessageHandler<Message> handler, Connection connection, String stream,
    String consumer, String scope, KeyDerivation keys, Function<Message, Fingerprint> fingerprint,
    Function<Message, String> deadLetterSubject, BatchConfig config, int batchSize,
    Duration fetchTimeout, boolean inProgressAcks) {}
