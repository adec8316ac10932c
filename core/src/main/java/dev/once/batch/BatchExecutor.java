package dev.once.batch;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.internal.BatchEngine;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * Runs a batch of broker messages, each once per idempotency key: claims every key of the batch
 * with one {@code claimAll}, handles each acquired message in order under a live lease, stores the
 * outcomes with one {@code completeAll}, and tells per message what happened
 * ({@link ItemResult}) so the adapter can acknowledge, redeliver or — after this engine published
 * the dead letter — acknowledge a message given up on. Thread-safe; one per consumer.
 *
 * <p>The rules it keeps, for every broker:
 * <ul>
 *   <li>Every claimed message is under a live lease until its outcome is stored or its claim
 *       released, those waiting their turn included: with a heartbeat scheduler in the
 *       {@code Once}, one beat extends all of them; without, each lease is checked (and extended
 *       when less than a third is left) just before its handler runs.
 *   <li>Nothing after a handler returns runs it again: an outcome the store does not take is kept
 *       with its claim held and stored before the message is handled again
 *       ({@link ItemResult.Status#OUTCOME_PENDING}).
 *   <li>A message whose key another worker holds is {@link ItemResult.Status#IN_PROGRESS}, to be
 *       delivered again after {@link BatchConfig#inProgressBackoff} or at the holder's lease end.
 *   <li>Messages of one ordering group ({@link Builder#orderedBy}) run in order: after the first
 *       that is not final, the rest of its group are not run ({@link ItemResult.Status#NOT_RUN}).
 * </ul>
 *
 * <pre>{@code
 * BatchExecutor<Delivery> executor = BatchExecutor.builder(once, (Delivery d, Attempt a) -> ship(d))
 *     .scope("orders.ship")
 *     .key(d -> d.getProperties().getMessageId())
 *     .fingerprint(d -> Fingerprint.of(d.getBody()))
 *     .deadLetters(letter -> publishToDlx(letter))
 *     .build();
 * for (ItemResult<Delivery> item : executor.process(deliveries).items()) {
 *   if (item.isFinal()) ack(item.message()); else requeueAt(item.message(), item.retryAt());
 * }
 * }</pre>
 *
 * @param <M> the message type
 */
public final class BatchExecutor<M> {

  private final Once once;
  private final String scope;
  private final BatchEngine<M> engine;

  private BatchExecutor(Once once, String scope, BatchEngine<M> engine) {
    this.once = once;
    this.scope = scope;
    this.engine = engine;
  }

  /** A builder running {@code handler} through {@code once}, with the defaults on {@link Builder}. */
  public static <M> Builder<M> builder(Once once, MessageHandler<M> handler) {
    return new Builder<>(once, handler);
  }

  /** Processes {@code messages} under the builder's scope. */
  public BatchOutcome<M> process(List<M> messages) {
    if (scope == null) {
      throw new IllegalStateException("no scope: set one with BatchExecutor.Builder.scope, or"
          + " pass one to process(messages, scope, stop)");
    }
    return process(messages, scope, () -> false);
  }

  /**
   * Processes {@code messages} (in the order given; messages of one ordering group in the order
   * they were delivered).
   *
   * @param scope the scope of the messages' idempotency keys
   * @param stop  asked before each message: true to stop, releasing the claims not yet run (their
   *              messages are {@link ItemResult.Status#NOT_RUN})
   */
  public BatchOutcome<M> process(List<M> messages, String scope, BooleanSupplier stop) {
    Objects.requireNonNull(messages, "messages");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(stop, "stop");
    return engine.process(messages, scope, stop);
  }

  /** The {@link Once} this executor claims through. */
  public Once once() {
    return once;
  }

  /** The scope set on the builder, or null. */
  public String scope() {
    return scope;
  }

  /**
   * Builds a {@link BatchExecutor}. Defaults: no scope (pass one to {@code process}); no key
   * (required); no fingerprint check (every message of a key matches); no dead-letter publisher
   * (a message to dead-letter is retried instead, see {@link DeadLetterPublisher#none()});
   * {@link BatchConfig#defaults()}; no ordering groups.
   *
   * @param <M> the message type
   */
  public static final class Builder<M> {
    private static final Fingerprint NO_FINGERPRINT = Fingerprint.of("");

    private final Once once;
    private final MessageHandler<M> handler;
    private String scope;
    private Function<M, String> keys;
    private Function<M, Fingerprint> fingerprint = m -> NO_FINGERPRINT;
    private DeadLetterPublisher<M> deadLetters = DeadLetterPublisher.none();
    private BatchConfig config = BatchConfig.defaults();
    private Function<M, ?> orderedBy;
    private Function<M, ?> messageId = Function.identity();

    private Builder(Once once, MessageHandler<M> handler) {
      this.once = Objects.requireNonNull(once, "once");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /** The scope of the idempotency keys (or pass one to each {@code process}). */
    public Builder<M> scope(String scope) {
      Objects.requireNonNull(scope, "scope");
      IdempotencyKey.of(scope, "probe"); // validates now, with the key's own message
      this.scope = scope;
      return this;
    }

    /**
     * How a message's idempotency key is derived (a message id, a header, a hash of the body).
     * Returning null, or throwing, means the message has none: see
     * {@link BatchConfig.Builder#noKeyPolicy}. Required.
     */
    public Builder<M> key(Function<M, String> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /**
     * The fingerprint of a message: a redelivery must produce the same one; the same key with
     * another fingerprint is dead-lettered as {@link DeadLetter.Reason#KEY_REUSED}.
     */
    public Builder<M> fingerprint(Function<M, Fingerprint> fingerprint) {
      this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
      return this;
    }

    /** Where messages given up on go, before their failure is stored. */
    public Builder<M> deadLetters(DeadLetterPublisher<M> publisher) {
      this.deadLetters = Objects.requireNonNull(publisher, "publisher");
      return this;
    }

    /**
     * How messages are retried, given up on and claimed (attempts, backoffs, messages without a
     * key, batch claims). Default: {@link BatchConfig#defaults()}.
     */
    public Builder<M> config(BatchConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /**
     * The ordering group of a message (a Kafka partition, an SQS FIFO message group): messages of
     * one group are handled in the order given, and after the first that is not final the rest of
     * its group are not run. A null group orders nothing. Default: no ordering groups.
     */
    public Builder<M> orderedBy(Function<M, ?> group) {
      this.orderedBy = Objects.requireNonNull(group, "group");
      return this;
    }

    /**
     * A stable identity of a message across redeliveries (equal and with equal hash codes), by
     * which the failures of messages processed without a key are counted in memory
     * ({@link NoKeyPolicy#PROCESS_UNPROTECTED}). Default: the message object itself.
     */
    public Builder<M> messageId(Function<M, ?> messageId) {
      this.messageId = Objects.requireNonNull(messageId, "messageId");
      return this;
    }

    /**
     * The executor.
     *
     * @throws IllegalStateException if no key derivation was set
     */
    public BatchExecutor<M> build() {
      if (keys == null) {
        throw new IllegalStateException("a key derivation is required: key(message -> its"
            + " idempotency key), e.g. the broker's message id");
      }
      return new BatchExecutor<>(once, scope, new BatchEngine<>(once.config(),
          new BatchEngine.Settings<>(handler, keys, fingerprint, deadLetters, config, orderedBy,
              messageId)));
    }
  }
}
