package dev.once.sqs;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.Scheduler;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.MessageHandler;
import dev.once.sqs.internal.ConsumerLoop;
import dev.once.sqs.internal.MessageKeys;
import dev.once.sqs.internal.Settings;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * Consumes an SQS queue (standard or FIFO) and runs a handler at most once per idempotency key (in
 * effect) over SQS's at-least-once delivery, with {@link Once} deciding. Each receive (up to 10
 * messages, long-polling; several receives gathered up to {@link Builder#batchSize}) is one
 * {@link BatchExecutor#process}: one {@code claimAll}, the handler for each acquired message in
 * order, one {@code completeAll}. Then:
 * <ul>
 *   <li>final messages (handled, replayed, dead-lettered) are deleted with
 *       {@code DeleteMessageBatch}, only after their outcome is stored; a delete that fails is
 *       logged, and the message comes again and is replayed;
 *   <li>while the batch runs, its messages' visibility is extended every third of the visibility
 *       timeout, so no other consumer receives them meanwhile;
 *   <li>the others (a retryable failure, in progress elsewhere, not run) get the visibility
 *       timeout of their retry ({@code ChangeMessageVisibility}, at most 12 hours): never a hot
 *       loop;
 *   <li>terminal failures, retries used up, reused or missing keys go to the
 *       {@linkplain Builder#deadLetterQueue dead-letter queue} (sent before the failure is stored)
 *       and are deleted; without one they are retried until the queue's redrive policy moves them.
 * </ul>
 * On a FIFO queue the messages of one message group run in order: after the first that is not
 * final, the rest of its group in the batch are not run and come again after it.
 *
 * <pre>{@code
 * IdempotentSqsConsumer consumer = IdempotentSqsConsumer
 *     .builder(once, sqs, queueUrl, (Message message, Attempt attempt) ->
 *         shipping.ship(message.body(), attempt.key()))
 *     .deadLetterQueue(dlqUrl)
 *     .build();
 * executor.submit(consumer); // receives until closed
 * ...
 * consumer.close();
 * }</pre>
 *
 * {@link #run()} runs once, on one thread; for parallelism build several consumers (they may share
 * the {@code Once} and the {@code SqsClient}). The {@code SqsClient} is the caller's: never closed
 * here.
 */
public final class IdempotentSqsConsumer implements Runnable, AutoCloseable {

  private static final Duration CLOSE_WAIT = Duration.ofSeconds(60);
  private static final System.Logger LOG =
      System.getLogger(IdempotentSqsConsumer.class.getName());

  private final Once once;
  private final ConsumerLoop loop;

  private IdempotentSqsConsumer(Once once, Settings settings) {
    this.once = once;
    this.loop = new ConsumerLoop(once, settings);
  }

  /**
   * A builder over {@code once} (its store, lease, retention, clock, failure policy, listener,
   * heartbeat), receiving from {@code queueUrl} with {@code sqs}.
   */
  public static Builder builder(Once once, SqsClient sqs, String queueUrl,
      MessageHandler<Message> handler) {
    return new Builder(once, sqs, queueUrl, handler);
  }

  /**
   * Receives and processes until {@link #stop()} or {@link #close()}. Runs once. An {@link Error}
   * from a handler is taken as the death of the process: the loop ends at once without deleting or
   * releasing anything (the messages come again after their visibility timeout) and is rethrown.
   *
   * @throws IllegalStateException if it already ran or was closed
   */
  @Override
  public void run() {
    loop.run();
  }

  /**
   * Asks the consumer to end after the message being handled; returns at once. The messages of the
   * batch not yet run are released and made visible again at once. A long poll in progress ends
   * when it returns (at most {@link Builder#waitTime}); its messages, if any, are released too.
   * An interrupt of the consumer's thread stops it the same way. Idempotent.
   */
  public void stop() {
    loop.stop();
  }

  /** Whether {@link #stop()} or {@link #close()} was called. */
  public boolean isStopRequested() {
    return loop.isStopRequested();
  }

  /**
   * Stops the consumer ({@link #stop()}) and waits up to 60 seconds for it to end: the message in
   * hand finished, its batch settled, a long poll in progress returned.
   */
  @Override
  public void close() {
    if (!loop.close(CLOSE_WAIT)) {
      LOG.log(System.Logger.Level.WARNING, "the SQS consumer of {0} did not end within {1}",
          queueUrl(), CLOSE_WAIT);
    }
  }

  /** The {@link Once} this consumer claims through. */
  public Once once() {
    return once;
  }

  /** The queue this consumer receives from. */
  public String queueUrl() {
    return loop.settings().queueUrl();
  }

  /** The scope of the idempotency keys. */
  public String scope() {
    return loop.settings().scope();
  }

  /**
   * Builds an {@link IdempotentSqsConsumer}. Defaults: scope = the queue's name; key = the FIFO
   * {@code MessageDeduplicationId} if present, else the message attribute
   * {@value #DEFAULT_KEY_ATTRIBUTE}, else the SQS message id; fingerprint = SHA-256 of the body;
   * no dead-letter queue; {@link #DEFAULT_CONFIG}; one receive per batch (10 messages); long polls
   * of 20 s; visibility timeout 30 s, extended every 10 s while the batch runs.
   */
  public static final class Builder {
    /** Default message attribute carrying the producer's idempotency key. */
    public static final String DEFAULT_KEY_ATTRIBUTE = "idempotency-key";
    /**
     * Core's {@link BatchConfig#defaults()} with two changes for SQS, where visibility counts in
     * whole seconds and every receive counts towards the queue's {@code maxReceiveCount}: retry
     * backoff 1 s doubling to 60 s (instead of 100 ms to 5 s), and a message in progress on
     * another consumer received again after 30 s, the default visibility timeout (instead of
     * 1 s), or at the holder's lease end if sooner.
     */
    public static final BatchConfig DEFAULT_CONFIG = BatchConfig.builder()
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(60))
        .inProgressBackoff(Duration.ofSeconds(30))
        .build();
    /** Default number of messages per batch: one receive. */
    public static final int DEFAULT_BATCH_SIZE = 10;
    /** Default long-poll wait of a receive. */
    public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(20);
    /** Default visibility timeout asked for on receive (and restored by each extension). */
    public static final Duration DEFAULT_VISIBILITY_TIMEOUT = Duration.ofSeconds(30);
    /** SQS's longest long-poll wait. */
    public static final Duration MAX_WAIT_TIME = Duration.ofSeconds(20);
    /** SQS's longest visibility timeout. */
    public static final Duration MAX_VISIBILITY_TIMEOUT = Duration.ofHours(12);
    /** The largest batch: 1000 receives of 10. */
    public static final int MAX_BATCH_SIZE = 10_000;

    private final Once once;
    private final SqsClient sqs;
    private final String queueUrl;
    private final MessageHandler<Message> handler;
    private String scope;
    private Function<Message, String> keys;
    private String keyAttribute = DEFAULT_KEY_ATTRIBUTE;
    private Function<Message, Fingerprint> fingerprint = m -> Fingerprint.of(m.body());
    private String deadLetterQueueUrl;
    /** The user's config, or null: {@link #DEFAULT_CONFIG}, in progress after the visibility. */
    private BatchConfig config;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Duration waitTime = DEFAULT_WAIT_TIME;
    private Duration visibilityTimeout = DEFAULT_VISIBILITY_TIMEOUT;
    private Scheduler scheduler;

    private Builder(Once once, SqsClient sqs, String queueUrl, MessageHandler<Message> handler) {
      this.once = Objects.requireNonNull(once, "once");
      this.sqs = Objects.requireNonNull(sqs, "sqs");
      this.queueUrl = Objects.requireNonNull(queueUrl, "queueUrl");
      this.handler = Objects.requireNonNull(handler, "handler");
      if (MessageKeys.queueName(queueUrl).isEmpty()) {
        throw new IllegalArgumentException("not a queue URL: " + queueUrl);
      }
    }

    /** The scope of the idempotency keys, instead of the queue's name. */
    public Builder scope(String scope) {
      Objects.requireNonNull(scope, "scope");
      IdempotencyKey.of(scope, "probe"); // validates now, with the key's own message
      this.scope = scope;
      return this;
    }

    /**
     * How the idempotency key is derived, instead of the default (see {@link Builder}). Returning
     * null, or throwing, means the message has none: see {@link BatchConfig#noKeyPolicy}.
     */
    public Builder key(Function<Message, String> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /**
     * The message attribute the default key derivation reads (after a FIFO message's
     * {@code MessageDeduplicationId}); a dead letter carries it first among the original
     * attributes.
     */
    public Builder keyAttribute(String name) {
      Objects.requireNonNull(name, "name");
      if (name.isBlank()) {
        throw new IllegalArgumentException("keyAttribute must not be blank");
      }
      this.keyAttribute = name;
      return this;
    }

    /**
     * The fingerprint of a message: a redelivery must produce the same one; the same key with
     * another fingerprint is dead-lettered as {@code KEY_REUSED}. Default: SHA-256 of the body.
     */
    public Builder fingerprint(Function<Message, Fingerprint> fingerprint) {
      this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
      return this;
    }

    /**
     * The queue messages given up on are sent to (terminal failure, retries used up, reused or
     * missing key), with their body, their attributes and why ({@link DeadLetterAttributes}),
     * before the failure is stored; then they are deleted. Without one, such a message is retried
     * (visibility backoff, the handler running again each time) until the queue's own redrive
     * policy moves it to its dead-letter queue after {@code maxReceiveCount} receives.
     */
    public Builder deadLetterQueue(String queueUrl) {
      this.deadLetterQueueUrl = Objects.requireNonNull(queueUrl, "queueUrl");
      return this;
    }

    /**
     * How messages are retried, given up on and claimed (attempts, backoffs, messages without a
     * key, batch claims). A retry's backoff becomes the message's visibility timeout, in whole
     * seconds rounded up; every receive counts towards the queue's {@code maxReceiveCount}, so
     * keep the in-progress backoff long. Default: {@link #DEFAULT_CONFIG} with the in-progress
     * backoff set to the {@linkplain #visibilityTimeout visibility timeout}. Start a config of
     * your own from {@code DEFAULT_CONFIG.toBuilder()}, not {@code BatchConfig.builder()}, whose
     * 100 ms and 1 s would spend receives towards {@code maxReceiveCount}.
     */
    public Builder config(BatchConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /**
     * How many messages a batch gathers, 1 to {@value #MAX_BATCH_SIZE}: one long poll, then
     * receives without waiting while messages come, up to this many. Larger batches mean fewer
     * store round trips; every message of a batch stays invisible (extended) until the batch ends.
     */
    public Builder batchSize(int messages) {
      if (messages < 1 || messages > MAX_BATCH_SIZE) {
        throw new IllegalArgumentException("batchSize must be 1 to " + MAX_BATCH_SIZE + ": "
            + messages);
      }
      this.batchSize = messages;
      return this;
    }

    /** How long a receive waits for messages (long polling), 0 to 20 seconds, whole seconds. */
    public Builder waitTime(Duration wait) {
      Objects.requireNonNull(wait, "wait");
      if (wait.isNegative() || wait.compareTo(MAX_WAIT_TIME) > 0) {
        throw new IllegalArgumentException("waitTime must be 0 to 20 seconds: " + wait);
      }
      this.waitTime = wait;
      return this;
    }

    /**
     * The visibility timeout asked for on receive, 1 second to 12 hours (whole seconds, rounded
     * up), restored every third of it while the batch runs.
     */
    public Builder visibilityTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.compareTo(Duration.ofSeconds(1)) < 0
          || timeout.compareTo(MAX_VISIBILITY_TIMEOUT) > 0) {
        throw new IllegalArgumentException("visibilityTimeout must be 1 s to 12 h: " + timeout);
      }
      this.visibilityTimeout = timeout;
      return this;
    }

    /**
     * What runs the visibility extension. Default: a daemon thread of the consumer's own, from
     * {@link #run()} until it ends.
     */
    public Builder visibilityScheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** The consumer. */
    public IdempotentSqsConsumer build() {
      String attribute = keyAttribute;
      Function<Message, String> derivation = keys != null ? keys
          : m -> MessageKeys.defaultKey(m, attribute);
      return new IdempotentSqsConsumer(once, new Settings(sqs, queueUrl,
          scope != null ? scope : validScope(MessageKeys.queueName(queueUrl)), handler,
          derivation, keyAttribute, fingerprint, deadLetterQueueUrl, effectiveConfig(), batchSize,
          waitTime, visibilityTimeout, scheduler));
    }

    /**
     * The config given, else {@link #DEFAULT_CONFIG} with a message in progress elsewhere received
     * again after the visibility timeout: a longer visibility means fewer receives spent on it.
     */
    private BatchConfig effectiveConfig() {
      return config != null ? config
          : DEFAULT_CONFIG.toBuilder().inProgressBackoff(visibilityTimeout).build();
    }

    private static String validScope(String queueName) {
      try {
        IdempotencyKey.of(queueName, "probe");
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("the queue name '" + queueName + "' cannot be the"
            + " scope of idempotency keys (" + e.getMessage() + "): set a scope", e);
      }
      return queueName;
    }
  }
}
