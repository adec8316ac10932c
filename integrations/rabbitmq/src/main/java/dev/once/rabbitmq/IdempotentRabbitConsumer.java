package dev.once.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.MessageHandler;
import dev.once.rabbitmq.internal.ConfirmedPublisher;
import dev.once.rabbitmq.internal.ConsumerWorker;
import dev.once.rabbitmq.internal.DeadLetterMessages;
import dev.once.rabbitmq.internal.DeliveryProcessor;
import dev.once.rabbitmq.internal.Settings;
import dev.once.support.Checks;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * Consumes a RabbitMQ queue running a handler at most once per idempotency key, in effect, over
 * RabbitMQ's at-least-once delivery: through publisher retries, consumers whose connection dies
 * before their acks, and redeliveries after a requeue.
 *
 * <p>Manual acknowledgements and {@code basicQos(prefetch)}; the deliveries received so far, up to
 * the prefetch, form a batch (a lone message waits no more than the {@linkplain Builder#linger
 * linger}); each batch is claimed with one store call ({@link BatchExecutor}) and its messages run
 * in delivery order. Only then are the messages whose outcome is final acknowledged: handled,
 * replayed (a duplicate), or dead-lettered. Any other — in progress on another consumer, failed
 * retryably, not stored — is held unacknowledged until its retry time and then requeued
 * ({@code basicNack(requeue=true)}), never in a hot loop; a retryable failure is dead-lettered
 * after {@link BatchConfig#maxAttempts} handler runs (counted in the store). Dead letters go to the
 * {@linkplain Builder#deadLetterExchange dead-letter exchange} with publisher confirms before the
 * failure is stored and the original acknowledged; they carry {@link DeadLetterHeaders}.
 *
 * <pre>{@code
 * IdempotentRabbitConsumer orders = IdempotentRabbitConsumer
 *     .builder(once, (Delivery d, Attempt attempt) -> shipping.ship(d.getBody(), attempt.key()))
 *     .queue("orders")
 *     .deadLetterExchange("orders.dlx")
 *     .build();
 * try (Subscription subscription = orders.start(connection)) {
 *   ...
 * }
 * }</pre>
 *
 * <p>How messages are retried, given up on and claimed is core's {@link BatchConfig}
 * ({@link Builder#config}), the same for every broker; this builder's own settings are
 * RabbitMQ's.
 *
 * Thread-safe: start as many subscriptions as you like, on one connection or several; each has its
 * own channel and worker thread.
 */
public final class IdempotentRabbitConsumer {

  private final Once once;
  private final Settings settings;
  private final DeliveryProcessor processor;

  private IdempotentRabbitConsumer(Once once, Settings settings, DeliveryProcessor processor) {
    this.once = once;
    this.settings = settings;
    this.processor = processor;
  }

  /** A builder over {@code once} (its store, lease, retention, clock, failure policy, listener). */
  public static Builder builder(Once once, MessageHandler<Delivery> handler) {
    return new Builder(once, handler);
  }

  /**
   * Starts consuming the queue on a new channel of {@code connection} (with
   * {@code basicQos(prefetch)} and manual acknowledgements) and a worker thread of its own. Dead
   * letters are published on another channel of the same connection.
   *
   * @throws IOException if the channel cannot be opened or the queue consumed (e.g. it does not
   *                     exist)
   */
  public Subscription start(Connection connection) throws IOException {
    Objects.requireNonNull(connection, "connection");
    Channel channel = connection.createChannel();
    if (channel == null) {
      throw new IOException("no channel available on the connection (channel-max reached)");
    }
    ConfirmedPublisher publisher = new ConfirmedPublisher(connection, settings.confirmTimeout());
    ConsumerWorker worker = new ConsumerWorker(channel, processor, publisher);
    String tag;
    try {
      channel.basicQos(settings.prefetch());
      tag = channel.basicConsume(settings.queue(), false, worker);
    } catch (IOException | RuntimeException e) {
      worker.closeChannel();
      throw e;
    }
    Thread thread = new Thread(worker, "once-rabbitmq-" + settings.queue());
    thread.start();
    return new Subscription(settings.queue(), tag, worker, thread, settings.closeTimeout());
  }

  /** The {@link Once} this consumer claims through. */
  public Once once() {
    return once;
  }

  /** The queue consumed. */
  public String queue() {
    return settings.queue();
  }

  /** The scope of the idempotency keys. */
  public String scope() {
    return settings.scope();
  }

  /**
   * Builds an {@link IdempotentRabbitConsumer}. Defaults: scope = the queue name; key = the
   * {@code message-id} property; fingerprint = SHA-256 of the body; messages without a key
   * dead-lettered; prefetch 100; linger 5 ms; {@link BatchConfig#defaults()}; dead letters routed
   * with the queue name; confirm timeout 10 s; close timeout 30 s.
   * The queue and a dead-letter exchange (or publisher) are required.
   */
  public static final class Builder {
    /** Default prefetch: the most deliveries unacknowledged at once, and so the largest batch. */
    public static final int DEFAULT_PREFETCH = 100;
    /** Default wait for more deliveries after the first of a batch. */
    public static final Duration DEFAULT_LINGER = Duration.ofMillis(5);
    /** Default wait for the broker's confirm of a dead letter. */
    public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);
    /** Default wait in {@link Subscription#close()} for the handler running to return. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final Once once;
    private final MessageHandler<Delivery> handler;
    private String queue;
    private String scope;
    private Function<Delivery, String> keys = Builder::messageId;
    private Function<Delivery, Fingerprint> fingerprint = d -> Fingerprint.of(d.getBody());
    private String deadLetterExchange;
    private String deadLetterRoutingKey;
    private DeadLetterPublisher<Delivery> deadLetters;
    private int prefetch = DEFAULT_PREFETCH;
    private Duration linger = DEFAULT_LINGER;
    private BatchConfig config = BatchConfig.defaults();
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;

    private Builder(Once once, MessageHandler<Delivery> handler) {
      this.once = Objects.requireNonNull(once, "once");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /** The queue to consume. Required; it must exist. */
    public Builder queue(String queue) {
      this.queue = Objects.requireNonNull(queue, "queue");
      return this;
    }

    /** The scope of the idempotency keys, instead of the queue name. */
    public Builder scope(String scope) {
      Objects.requireNonNull(scope, "scope");
      IdempotencyKey.of(scope, "probe"); // validates now, with the key's own message
      this.scope = scope;
      return this;
    }

    /** The key is the {@code message-id} property (the default). */
    public Builder keyFromMessageId() {
      this.keys = Builder::messageId;
      return this;
    }

    /** The key is the value of header {@code name} (a string, bytes as UTF-8, or a number). */
    public Builder keyFromHeader(String name) {
      Objects.requireNonNull(name, "name");
      this.keys = d -> {
        Map<String, Object> headers = d.getProperties() == null ? null
            : d.getProperties().getHeaders();
        return headers == null ? null : DeadLetterMessages.text(headers.get(name));
      };
      return this;
    }

    /**
     * The key derived by {@code keys} (e.g. from a field of the body); null, or an exception,
     * means the message has none (see {@link BatchConfig#noKeyPolicy}).
     */
    public Builder key(Function<Delivery, String> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /**
     * The fingerprint of a message: a redelivery must produce the same one; the same key with
     * another fingerprint is dead-lettered as {@code KEY_REUSED}. Default: SHA-256 of the body.
     */
    public Builder fingerprint(Function<Delivery, Fingerprint> fingerprint) {
      this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
      return this;
    }

    /**
     * The exchange dead letters are published to (with publisher confirms, mandatory: a dead
     * letter no queue takes is an error, and the message is retried). It must exist.
     */
    public Builder deadLetterExchange(String exchange) {
      this.deadLetterExchange = Objects.requireNonNull(exchange, "exchange");
      return this;
    }

    /** The routing key of dead letters (default: the queue name). */
    public Builder deadLetterRoutingKey(String routingKey) {
      this.deadLetterRoutingKey = Objects.requireNonNull(routingKey, "routingKey");
      return this;
    }

    /**
     * A publisher of dead letters of your own instead of the dead-letter exchange (another
     * broker, a table): it must return only once the letter is durable, and throw otherwise.
     */
    public Builder deadLetters(DeadLetterPublisher<Delivery> publisher) {
      this.deadLetters = Objects.requireNonNull(publisher, "publisher");
      return this;
    }

    /**
     * The prefetch ({@code basicQos}): how many deliveries may be unacknowledged at once, and so
     * the largest batch (held messages included). Default 100.
     */
    public Builder prefetch(int prefetch) {
      this.prefetch = Checks.positive(prefetch, "prefetch");
      if (prefetch > 65_535) {
        throw new IllegalArgumentException("prefetch " + prefetch + " is above AMQP's 65535");
      }
      return this;
    }

    /**
     * How long a batch waits for one more delivery before it runs, once it has one and fewer than
     * the prefetch (zero: only what has already arrived). Default 5 ms.
     */
    public Builder linger(Duration linger) {
      Objects.requireNonNull(linger, "linger");
      if (linger.isNegative()) {
        throw new IllegalArgumentException("linger must not be negative: " + linger);
      }
      this.linger = linger;
      return this;
    }

    /**
     * How messages are retried, given up on and claimed (attempts, backoffs, messages without a
     * key, batch claims). A message not final is held unacknowledged until its retry time, then
     * requeued. Default: {@link BatchConfig#defaults()}.
     */
    public Builder config(BatchConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /** How long to wait for the broker's confirm of a dead letter. Default 10 s. */
    public Builder confirmTimeout(Duration timeout) {
      this.confirmTimeout = Checks.positive(timeout, "confirmTimeout");
      return this;
    }

    /** How long {@link Subscription#close()} waits for the running handler. Default 30 s. */
    public Builder closeTimeout(Duration timeout) {
      this.closeTimeout = Checks.positive(timeout, "closeTimeout");
      return this;
    }

    /**
     * The consumer.
     *
     * @throws IllegalStateException if no queue, or neither a dead-letter exchange nor a
     *                               publisher, was set
     * @throws InvalidKeyException   if the queue name cannot be the scope (set one)
     */
    public IdempotentRabbitConsumer build() {
      if (queue == null) {
        throw new IllegalStateException("a queue is required: queue(\"orders\")");
      }
      if (deadLetterExchange == null && deadLetters == null) {
        throw new IllegalStateException("a dead-letter exchange is required:"
            + " deadLetterExchange(\"orders.dlx\") (or deadLetters(publisher))");
      }
      String effectiveScope = scope;
      if (effectiveScope == null) {
        try {
          IdempotencyKey.of(queue, "probe");
        } catch (InvalidKeyException e) {
          throw new InvalidKeyException("the queue name '" + queue + "' cannot be the scope of"
              + " idempotency keys (" + e.getMessage() + "): set a scope on the builder");
        }
        effectiveScope = queue;
      }
      Settings settings = new Settings(queue, effectiveScope, prefetch, linger,
          deadLetterExchange, deadLetterRoutingKey == null ? queue : deadLetterRoutingKey,
          deadLetters, confirmTimeout, closeTimeout, config.initialBackoff());
      DeliveryProcessor processor = new DeliveryProcessor(settings);
      processor.executor(BatchExecutor.builder(once, handler)
          .scope(effectiveScope)
          .key(keys)
          .fingerprint(fingerprint)
          .deadLetters(deadLetters != null ? deadLetters : processor::publish)
          .config(config)
          // No ordering groups: a queue has no partitions, and RabbitMQ itself does not keep
          // order across a requeue. The batch still runs in delivery order.
          // A message processed without a key is known again by its body.
          .messageId(d -> ByteBuffer.wrap(d.getBody()))
          .build());
      return new IdempotentRabbitConsumer(once, settings, processor);
    }

    private static String messageId(Delivery d) {
      return d.getProperties() == null ? null : d.getProperties().getMessageId();
    }
  }
}
