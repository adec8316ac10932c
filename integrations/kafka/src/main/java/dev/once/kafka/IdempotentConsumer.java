package dev.once.kafka;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.Once;
import dev.once.spi.Checks;
import dev.once.kafka.internal.AutoCommit;
import dev.once.kafka.internal.BatchProcessor;
import dev.once.kafka.internal.RecordFingerprints;
import dev.once.kafka.internal.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;

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
 *     .deadLetters(DeadLetterPublisher.to(producer))
 *     .build();
 * try (IdempotentConsumerLoop<String, String> loop = orders.loop(kafkaConsumer, List.of("orders"))) {
 *   executor.submit(loop);
 *   ...
 * }
 * }</pre>
 *
 * Thread-safe: {@link #process} may be called from several consumer threads at once.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class IdempotentConsumer<K, V> {

  private final Once once;
  private final BatchProcessor<K, V> processor;

  private IdempotentConsumer(Once once, Settings<K, V> settings) {
    this.once = once;
    this.processor = new BatchProcessor<>(once, settings);
  }

  /** A builder over {@code once} (its store, lease, retention, clock, failure policy, listener). */
  public static <K, V> Builder<K, V> builder(Once once, RecordHandler<K, V> handler) {
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
    return processor.process(records, scopeFor(groupId), () -> false);
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
   * {@link #fingerprint}); records without a key dead-lettered; 5 attempts; retry backoff 100 ms
   * doubling to 5 s; records in progress elsewhere looked at again every second (or at their
   * lease end); batch claims; poll timeout 500 ms. A dead-letter publisher is required.
   */
  public static final class Builder<K, V> {
    /** Default number of attempts before a retryable failure is dead-lettered. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** Default first retry backoff. */
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(100);
    /** Default longest retry backoff. */
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(5);
    /** Default pause before looking again at a record in progress on another consumer. */
    public static final Duration DEFAULT_IN_PROGRESS_BACKOFF = Duration.ofSeconds(1);
    /** Default poll timeout of the loop. */
    public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(500);

    private final Once once;
    private final RecordHandler<K, V> handler;
    private String scope;
    private KeyDerivation<K, V> keys = KeyDerivation.header(KeyDerivation.DEFAULT_HEADER);
    private Function<ConsumerRecord<K, V>, Fingerprint> fingerprint = RecordFingerprints::ofValue;
    private NoKeyPolicy noKeyPolicy = NoKeyPolicy.DEAD_LETTER;
    private DeadLetterPublisher<K, V> deadLetters;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
    private Duration inProgressBackoff = DEFAULT_IN_PROGRESS_BACKOFF;
    private boolean batchClaims = true;
    private Duration pollTimeout = DEFAULT_POLL_TIMEOUT;

    private Builder(Once once, RecordHandler<K, V> handler) {
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

    /** How the idempotency key is derived; e.g. {@code header("id").orElse(sha256OfValue())}. */
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

    /** What to do with records without a key. */
    public Builder<K, V> noKeyPolicy(NoKeyPolicy policy) {
      this.noKeyPolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** Where given-up records go. Required. */
    public Builder<K, V> deadLetters(DeadLetterPublisher<K, V> publisher) {
      this.deadLetters = Objects.requireNonNull(publisher, "publisher");
      return this;
    }

    /** How many times the handler may fail retryably before the record is dead-lettered. */
    public Builder<K, V> maxAttempts(int attempts) {
      this.maxAttempts = Checks.positive(attempts, "maxAttempts");
      return this;
    }

    /** Backoff between retries: {@code initial}, doubling up to {@code max}. */
    public Builder<K, V> retryBackoff(Duration initial, Duration max) {
      Checks.backoff(initial, max);
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /** How long to wait before looking again at a record in progress on another consumer. */
    public Builder<K, V> inProgressBackoff(Duration backoff) {
      this.inProgressBackoff = Checks.positive(backoff, "inProgressBackoff");
      return this;
    }

    /**
     * True (the default): one {@code claimAll} per batch. False: one claim per record just before
     * it runs, as {@link Once#call} does; for comparison (benchmarks) and stores without a batch
     * claim.
     */
    public Builder<K, V> batchClaims(boolean batchClaims) {
      this.batchClaims = batchClaims;
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
            + " deadLetters(DeadLetterPublisher.to(producer))");
      }
      return new IdempotentConsumer<>(once, new Settings<>(handler, scope, keys, fingerprint,
          noKeyPolicy, deadLetters, maxAttempts, initialBackoff, maxBackoff, inProgressBackoff,
          batchClaims, pollTimeout));
    }
  }
}
