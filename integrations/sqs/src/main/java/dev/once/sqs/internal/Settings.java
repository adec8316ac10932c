package dev.once.sqs.internal;

import dev.once.Fingerprint;
import dev.once.Scheduler;
import dev.once.batch.MessageHandler;
import dev.once.batch.BatchConfig;
import java.time.Duration;
import java.util.function.Function;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * The settings of one consumer, fixed when it is built. Not API.
 *
 * @param scheduler      runs the visibility extension; null: a daemon thread of the consumer's own
 * @param keyAttribute   the message attribute the default key derivation reads (for messages
 *                       dead-lettered, copied first so a redrive keeps the key)
 */
public record Settings(SqsClient sqs, String queueUrl, String scope,
    MessageHandler<Message> handler, Function<Message, String> keys, String keyAttribute,
    Function<Message, Fingerprint> fingerprint, String deadLetterQueueUrl, BatchConfig config,
    int batchSize, Duration waitTime, Duration visibilityTimeout,
    Scheduler scheduler) {}
