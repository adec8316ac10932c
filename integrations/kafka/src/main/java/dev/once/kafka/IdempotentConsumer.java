package dev.once.kafka;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.MessageHandler;
import dev.once.kafka.internal.AutoCommit;
import dev.once.kafka.internal.BatchProcessor;
import dev.once.kafka.internal.RecordFingerprints;
import dev.once.kafka.internal.Settings;
import dev.once.support.Checks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs a per-record handler at most once per idempotency key (in effect) over Kafka's
 * at-least-once delivery, with {@link Once} deciding: one {@code claimAll} per poll batch (one
 * store round trip), then the handler for each acquired record in partition order; duplicates are
 * skipped; a record in progress on another consumer (around rebalances) is waited for, without
 * committing past it; failures are retried with backoff, then dead-lettered; terminal failures are
 * stored and dead-lettered. Offsets may be committed only past records whose outcome is final.
 *
 * <p>Use it through the poll loop ({@link #loop}), through the Spring Kafka listeners of
 * {@code dev.once.kafka.spring}, or call {@link #process} from a loop of your own and apply the
 * {@link BatchResult}.
 *
 * <pre>{@code
 * IdempotentConsumer<String, String> orders = IdempotentConsumer
 *     .builder(once, (ConsumerRecord<String, String> record, Attempt attempt) ->
 *         shipping.ship(record.value(), attempt.key()))
 *     .deadLetters(KafkaDeadLetters.to(producer))
 *     .config(BatchConfig.builder().maxAttempts(3).build())   // optional: retries and more
 *     .build();
 * try (IdempotentConsumerLoop<String, String> loop = orders.loop(kafkaConsumer, List.of("orders"))) {
 *   executor.submit(loop);
 *   ...
 * }
 * }</pre>
 *
 * <p>How records are retried, given up on and claimed is core's {@link BatchConfig}, the same for
 * every broker; this builder's own settings are Kafka's: the scope (by default the consumer group),
 * the key and fingerprint of a record, the dead-letter topic and the poll timeout.
 *
 * Thread-safe: {@link #process} may be called from several consumer threads at once.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class IdempotentConsumer<K, V> {

  private final Once once;
  private final BatchProcessor<K, V> processor;

  private IdempotentConsumer(Once once, BatchProcessor<K, V> processor) {
    this.once = once;
    this.processor = processor;
  }

  /**
   * A builder over {@code once} (its store, lease, retention, clock, failure policy, listener).
   *
   * @param handler the business logic for one record; throwing an {@link Exception} reports a
   *     failure (terminal ones by the {@link dev.once.FailurePolicy} are dead-lettered at once,
   *     others retried up to {@link BatchConfig#maxAttempts}); an {@link Error} is taken as the
   *     death of the process: nothing is recorded and the poll loop ends
   */
  public static <K, V> Builder<K, V> builder(Once once,
      MessageHandler<ConsumerRecord<K, V>> handler) {
    return new Builder<>(once, handler);
  }

  /** Processes a poll's records; the scope must have been set on the builder. */
  public BatchResult process(ConsumerRecords<K, V> records) {
    Objects.requireNonNull(records, "records");
    List<ConsumerRecord<K, V>> list = new ArrayList<>(records.count());
    records.forEach(list::add);
    return process(list);
  }

  /**
   * Processes records in poll order (grouped by partition, each partition in offset order); the
   * scope must have been set on the builder.
   */
  public BatchResult process(List<ConsumerRecord<K, V>> records) {
    return process(records, null);
  }

  /**
   * Processes records in poll order; keys are scoped by the builder's scope or, if none was set,
   * by {@code groupId} (the consumer group).
   *
   * @throws IllegalStateException if neither a scope nor a group id is given
   * @throws InvalidKeyException   if the group id is not a valid scope (set one on the builder)
   */
  public BatchResult process(List<ConsumerRecord<K, V>> records, String groupId) {
    Objects.requireNonNull(records, "records");
    return BatchResults.of(processor.process(records, scopeFor(groupId), () -> false));
  }

  /**
   * The poll loop over {@code consumer}, subscribing to {@code topics} when it runs. The consumer
   * must have {@code enable.auto.commit=false}: the loop commits each record's offset only once
   * its outcome is stored, and Kafka's auto-commit (on by default) would commit positions past
   * records that never ran. The loop owns the consumer from {@link IdempotentConsumerLoop#run()}
   * on and closes it when it ends.
   *
   * @throws IllegalArgumentException if the consumer is a {@code KafkaConsumer} with
   *     {@code enable.auto.commit=true} (read from the consumer; a consumer whose setting cannot be
   *     read is taken as it is, and the loop's seek-back before every close still keeps a commit
   *     from passing a record that did not run)
   */
  public IdempotentConsumerLoop<K, V> loop(Consumer<K, V> consumer, Collection<String> topics) {
    Objects.requireNonNull(consumer, "consumer");
    if (AutoCommit.enabled(consumer).orElse(false)) {
      throw new IllegalArgumentException("this consumer has enable.auto.commit=true (Kafka's"
          + " default): the loop commits each offset itself once the record's outcome is stored,"
          + " and auto-commit would commit positions past records that never ran. Build the"
          + " consumer with ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG (\"enable.auto.commit\")"
          + " set to \"false\".");
    }
    return new IdempotentConsumerLoop<>(this, consumer, topics);
  }

  /** The {@link Once} this consumer claims through. */
  public Once once() {
    return once;
  }

  BatchProcessor<K, V> processor() {
    return processor;
  }

  String scopeFor(String groupId) {
    String scope = processor.settings().scope();
    if (scope != null) {
      return scope;
    }
    if (groupId == null) {
      throw new IllegalStateException("no scope: set one with IdempotentConsumer.Builder.scope,"
          + " or process with the consumer group id");
    }
    try {
      IdempotencyKey.of(groupId, "probe");
    } catch (InvalidKeyException e) {
      throw new InvalidKeyException("the consumer group id '" + groupId + "' cannot be the scope"
          + " of idempotency keys (" + e.getMessage() + "): set a scope on the builder");
    }
    return groupId;
  }

  /**
   * Builds an {@link IdempotentConsumer}. Defaults: scope = the consumer group id; key from the
   * {@value KeyDerivation#DEFAULT_HEADER} header; fingerprint = SHA-256 of the value when it is a
   * {@code byte[]}, {@code String} or {@code ByteBuffer} (other types: no fingerprint check, see
   * {@link #fingerprint}); {@link BatchConfig#defaults()}; poll timeout 500 ms. A dead-letter
   * publisher is required.
   */
  public static final class Builder<K, V> {
    /** Default poll timeout of the loop. */
    public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(500);

    private final Once once;
    private final MessageHandler<ConsumerRecord<K, V>> handler;
    private String scope;
    private KeyDerivation<K, V> keys = KeyDerivation.header(KeyDerivation.DEFAULT_HEADER);
    private Function<ConsumerRecord<K, V>, Fingerprint> fingerprint = RecordFingerprints::ofValue;
    private DeadLetterPublisher<ConsumerRecord<K, V>> deadLetters;
    private BatchConfig config = BatchConfig.defaults();
    private Duration pollTimeout = DEFAULT_POLL_TIMEOUT;

    private Builder(Once once, MessageHandler<ConsumerRecord<K, V>> handler) {
      this.once = Objects.requireNonNull(once, "once");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /** The scope of the idempotency keys, instead of the consumer group id. */
    public Builder<K, V> scope(String scope) {
      Objects.requireNonNull(scope, "scope");
      IdempotencyKey.of(scope, "probe"); // validates now, with the key's own message
      this.scope = scope;
      return this;
    }

    /**
     * How the idempotency key is derived; e.g. {@code header("id").orElse(sha256OfValue())}. A
     * record without one is handled as {@link BatchConfig#noKeyPolicy} says.
     */
    public Builder<K, V> key(KeyDerivation<K, V> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /**
     * The fingerprint of a record: a redelivery must produce the same one; the same key with
     * another fingerprint is dead-lettered as {@code KEY_REUSED}. For deserialized objects, e.g.
     * {@code r -> CanonicalJson.fingerprint(r.value())} or {@code r -> Fingerprint.of(r.key())}.
     */
    public Builder<K, V> fingerprint(Function<ConsumerRecord<K, V>, Fingerprint> fingerprint) {
      this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
      return this;
    }

    /**
     * Where given-up records go: {@link KafkaDeadLetters#to(org.apache.kafka.clients.producer.Producer)
     * KafkaDeadLetters.to(producer)}, a {@code KafkaTemplateDeadLetterPublisher}, or your own
     * (it must return only once the letter is durable, and throw otherwise). Required.
     */
    public Builder<K, V> deadLetters(DeadLetterPublisher<ConsumerRecord<K, V>> publisher) {
      this.deadLetters = Objects.requireNonNull(publisher, "publisher");
      return this;
    }

    /**
     * How records are retried, given up on and claimed (attempts, backoffs, records without a
     * key, batch claims). Default: {@link BatchConfig#defaults()}.
     */
    public Builder<K, V> config(BatchConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /** How long the loop's {@code poll} blocks at most. */
    public Builder<K, V> pollTimeout(Duration timeout) {
      this.pollTimeout = Checks.positive(timeout, "pollTimeout");
      return this;
    }

    /**
     * The consumer.
     *
     * @throws IllegalStateException if no dead-letter publisher was set
     */
    public IdempotentConsumer<K, V> build() {
      if (deadLetters == null) {
        throw new IllegalStateException("a dead-letter publisher is required:"
            + " deadLetters(KafkaDeadLetters.to(producer))");
      }
      BatchExecutor<ConsumerRecord<K, V>> executor = BatchExecutor.builder(once, handler)
          .key(keys::keyOf)
          .fingerprint(fingerprint)
          .deadLetters(deadLetters)
          .config(config)
          // A partition is an ordering group: after a record that is not final, the rest of its
          // partition wait (the offset cannot pass it).
          .orderedBy(r -> new TopicPartition(r.topic(), r.partition()))
          .messageId(r -> new RecordId(r.topic(), r.partition(), r.offset()))
          .build();
      return new IdempotentConsumer<>(once, new BatchProcessor<>(once, executor,
          new Settings(scope, pollTimeout)));
    }

    /** A record's identity across redeliveries, for records processed without a key. */
    private record RecordId(String topic, int partition, long offset) {}
  }
}
