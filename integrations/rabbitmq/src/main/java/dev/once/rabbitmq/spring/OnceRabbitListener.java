package dev.once.rabbitmq.spring;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.MessageHandler;
import dev.once.rabbitmq.DeadLetterHeaders;
import dev.once.rabbitmq.internal.ConfirmedPublisher;
import dev.once.rabbitmq.internal.DeadLetterMessages;
import dev.once.rabbitmq.internal.Settler;
import dev.once.support.Checks;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.listener.api.ChannelAwareBatchMessageListener;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;
import org.springframework.amqp.rabbit.support.MessagePropertiesConverter;

/**
 * A Spring AMQP listener that gives a listener container the guarantees of
 * {@link dev.once.rabbitmq.IdempotentRabbitConsumer}: each batch the container hands over (with
 * {@code consumerBatchEnabled}, else each message) is claimed with one store call and run in
 * delivery order; the messages whose outcome is final (handled, replayed, dead-lettered) are then
 * acknowledged on the container's channel; the others are held unacknowledged until their retry
 * time and then requeued ({@code basicNack(requeue=true)}); dead letters go to the dead-letter
 * exchange with publisher confirms, on a channel of the listener's own, before the failure is
 * stored and the original acknowledged.
 *
 * <p>Needs the container's {@code AcknowledgeMode.MANUAL} (refused otherwise, when the container
 * is initialised). For batches: {@code setConsumerBatchEnabled(true)}, {@code setBatchSize(n)}
 * and a short {@code setReceiveTimeout} (the linger: the container waits that long for each further
 * message of a batch).
 *
 * <pre>{@code
 * SimpleMessageListenerContainer container = new SimpleMessageListenerContainer(connectionFactory);
 * container.setQueueNames("orders");
 * container.setAcknowledgeMode(AcknowledgeMode.MANUAL);
 * container.setConsumerBatchEnabled(true);
 * container.setBatchSize(100);
 * container.setReceiveTimeout(10);
 * container.setMessageListener(OnceRabbitListener
 *     .builder(once, (Message m, Attempt attempt) -> shipping.ship(m.getBody(), attempt.key()))
 *     .scope("orders")
 *     .deadLetterExchange("orders.dlx")
 *     .build());
 * }</pre>
 *
 * Thread-safe: one listener serves all the container's consumers. {@link #close()} it after the
 * container stops (a Spring bean's destroy does).
 */
public final class OnceRabbitListener implements ChannelAwareBatchMessageListener, AutoCloseable {

  private static final System.Logger LOG = System.getLogger(OnceRabbitListener.class.getName());

  private final Once once;
  private final String scope;
  private final String deadLetterExchange;
  private final String deadLetterRoutingKey;
  private final Duration confirmTimeout;
  private final Duration initialBackoff;
  private final BatchExecutor<Message> executor;
  private final MessagePropertiesConverter converter = new DefaultMessagePropertiesConverter();
  /** Per consuming channel (one per container consumer): its holds and its dead-letter channel. */
  private final Map<Channel, ChannelState> channels = new ConcurrentHashMap<>();
  /** The state of the channel whose batch runs on this thread, for dead letters. */
  private final ThreadLocal<ChannelState> current = new ThreadLocal<>();
  /** Requeues held messages when their time comes. */
  private final ScheduledExecutorService holds;
  private volatile boolean closed;

  private OnceRabbitListener(Builder b) {
    this.once = b.once;
    this.scope = b.scope;
    this.deadLetterExchange = b.deadLetterExchange;
    this.deadLetterRoutingKey = b.deadLetterRoutingKey;
    this.confirmTimeout = b.confirmTimeout;
    this.initialBackoff = b.config.initialBackoff();
    this.executor = BatchExecutor.builder(b.once, b.handler)
        .scope(b.scope)
        .key(b.keys)
        .fingerprint(b.fingerprint)
        .deadLetters(b.deadLetters != null ? b.deadLetters : this::publish)
        .config(b.config)
        .messageId(m -> ByteBuffer.wrap(m.getBody()))
        .build();
    this.holds = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "once-rabbitmq-holds");
      t.setDaemon(true);
      return t;
    });
  }

  /** A builder over {@code once} (its store, lease, retention, clock, failure policy, listener). */
  public static Builder builder(Once once, MessageHandler<Message> handler) {
    return new Builder(once, handler);
  }

  /** Refuses any acknowledge mode but {@code MANUAL}: this listener acknowledges itself. */
  @Override
  public void containerAckMode(AcknowledgeMode mode) {
    if (mode != AcknowledgeMode.MANUAL) {
      throw new IllegalStateException("OnceRabbitListener acknowledges each message only once its"
          + " outcome is stored: set the container's AcknowledgeMode to MANUAL (it is " + mode
          + ")");
    }
  }

  /** Processes one message as a batch of one. */
  @Override
  public void onMessage(Message message, Channel channel) {
    onMessageBatch(List.of(message), channel);
  }

  /**
   * Processes a batch: one claim for all, the handler for each acquired message in order, then
   * acknowledges the final messages and holds the others until their retry time. Never throws: a
   * container in MANUAL mode would leave the messages unacknowledged.
   */
  @Override
  public void onMessageBatch(List<Message> messages, Channel channel) {
    Objects.requireNonNull(channel, "no channel: OnceRabbitListener needs a channel-aware"
        + " container in AcknowledgeMode.MANUAL");
    if (messages.isEmpty()) {
      return;
    }
    ChannelState state = state(channel);
    List<Long> tags = messages.stream().map(m -> m.getMessageProperties().getDeliveryTag())
        .toList();
    if (closed) {
      state.settler.holdAll(tags, Duration.ZERO);
      state.settler.releaseDue();
      return;
    }
    current.set(state);
    try {
      BatchOutcome<Message> outcome = executor.process(messages, scope,
          () -> closed || !channel.isOpen());
      state.settler.settle(outcome.items(), m -> m.getMessageProperties().getDeliveryTag(),
          once.clock().instant());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "a batch of " + messages.size() + " messages failed;"
          + " they are requeued after " + initialBackoff, e);
      state.settler.holdAll(tags, initialBackoff);
    } finally {
      current.remove();
    }
  }

  private ChannelState state(Channel channel) {
    // A consumer restarted by the container has a new channel: forget the closed ones (the broker
    // requeued their unacknowledged messages).
    for (Iterator<Map.Entry<Channel, ChannelState>> it = channels.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<Channel, ChannelState> e = it.next();
      if (e.getKey() != channel && !e.getKey().isOpen()) {
        it.remove();
        e.getValue().close();
      }
    }
    return channels.computeIfAbsent(channel, ChannelState::new);
  }

  private void publish(DeadLetter<Message> letter) throws Exception {
    ChannelState state = current.get();
    if (state == null) {
      throw new IllegalStateException("no dead-letter channel: not on a listener thread");
    }
    Message message = letter.message();
    MessageProperties p = message.getMessageProperties();
    AMQP.BasicProperties original = converter.fromMessageProperties(p,
        StandardCharsets.UTF_8.name());
    DeadLetterMessages.Origin origin = new DeadLetterMessages.Origin(p.getReceivedExchange(),
        p.getReceivedRoutingKey(), p.getConsumerQueue(), p.getMessageId());
    String routingKey = deadLetterRoutingKey != null ? deadLetterRoutingKey
        : p.getConsumerQueue() != null ? p.getConsumerQueue() : "";
    state.publisher().publish(deadLetterExchange, routingKey,
        DeadLetterMessages.properties(original, origin, letter), message.getBody());
  }

  /** The {@link Once} this listener claims through. */
  public Once once() {
    return once;
  }

  /** The scope of the idempotency keys. */
  public String scope() {
    return scope;
  }

  /**
   * Requeues every held message now and closes the listener's dead-letter channels. Call it once
   * the container has stopped; a batch handed over afterwards is requeued at once. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    for (ChannelState state : channels.values()) {
      state.settler.releaseAll();
      state.close();
    }
    channels.clear();
    holds.shutdownNow();
  }

  /** A consuming channel's holds, and the confirmed channel its dead letters go through. */
  private final class ChannelState {
    final Settler settler;
    final Channel channel;
    private ConfirmedPublisher publisher;

    ChannelState(Channel channel) {
      this.channel = channel;
      this.settler = new Settler(channel, "a listener container", false, this::schedule);
    }

    private void schedule(long delayNanos) {
      try {
        holds.schedule(settler::releaseDue, delayNanos, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        settler.releaseAll(); // closed meanwhile: requeue now
      }
    }

    /** On the same connection as the consuming channel, opened on first use. */
    synchronized ConfirmedPublisher publisher() {
      if (publisher == null || publisher.connection() != channel.getConnection()) {
        if (publisher != null) {
          publisher.close();
        }
        publisher = new ConfirmedPublisher(channel.getConnection(), confirmTimeout);
      }
      return publisher;
    }

    synchronized void close() {
      if (publisher != null) {
        publisher.close();
        publisher = null;
      }
    }
  }

  /**
   * Builds an {@link OnceRabbitListener}. Defaults: key = the {@code message-id} property;
   * fingerprint = SHA-256 of the body; {@link BatchConfig#defaults()}; dead letters routed with
   * the consumer queue's name; confirm timeout 10 s. The scope and a dead-letter exchange (or publisher) are required.
   */
  public static final class Builder {
    private final Once once;
    private final MessageHandler<Message> handler;
    private String scope;
    private Function<Message, String> keys = m -> m.getMessageProperties().getMessageId();
    private Function<Message, Fingerprint> fingerprint = m -> Fingerprint.of(m.getBody());
    private String deadLetterExchange;
    private String deadLetterRoutingKey;
    private DeadLetterPublisher<Message> deadLetters;
    private BatchConfig config = BatchConfig.defaults();
    private Duration confirmTimeout = Duration.ofSeconds(10);

    private Builder(Once once, MessageHandler<Message> handler) {
      this.once = Objects.requireNonNull(once, "once");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /** The scope of the idempotency keys (e.g. the queue name). Required. */
    public Builder scope(String scope) {
      Objects.requireNonNull(scope, "scope");
      IdempotencyKey.of(scope, "probe"); // validates now, with the key's own message
      this.scope = scope;
      return this;
    }

    /** The key is the {@code message-id} property (the default). */
    public Builder keyFromMessageId() {
      this.keys = m -> m.getMessageProperties().getMessageId();
      return this;
    }

    /** The key is the value of header {@code name} (a string, bytes as UTF-8, or a number). */
    public Builder keyFromHeader(String name) {
      Objects.requireNonNull(name, "name");
      this.keys = m -> DeadLetterMessages.text(m.getMessageProperties().getHeaders().get(name));
      return this;
    }

    /** The key derived by {@code keys}; null, or an exception, means the message has none. */
    public Builder key(Function<Message, String> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /** The fingerprint of a message (default: SHA-256 of the body). */
    public Builder fingerprint(Function<Message, Fingerprint> fingerprint) {
      this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
      return this;
    }

    /**
     * The exchange dead letters are published to, with publisher confirms and mandatory, carrying
     * {@link DeadLetterHeaders}. It must exist.
     */
    public Builder deadLetterExchange(String exchange) {
      this.deadLetterExchange = Objects.requireNonNull(exchange, "exchange");
      return this;
    }

    /** The routing key of dead letters (default: the queue the message was consumed from). */
    public Builder deadLetterRoutingKey(String routingKey) {
      this.deadLetterRoutingKey = Objects.requireNonNull(routingKey, "routingKey");
      return this;
    }

    /** A publisher of dead letters of your own; it must return only once the letter is durable. */
    public Builder deadLetters(DeadLetterPublisher<Message> publisher) {
      this.deadLetters = Objects.requireNonNull(publisher, "publisher");
      return this;
    }

    /**
     * How messages are retried, given up on and claimed (attempts, backoffs, messages without a
     * key, batch claims). Default: {@link BatchConfig#defaults()}.
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

    /**
     * The listener.
     *
     * @throws IllegalStateException if no scope, or neither a dead-letter exchange nor a
     *                               publisher, was set
     */
    public OnceRabbitListener build() {
      if (scope == null) {
        throw new IllegalStateException("a scope is required: scope(\"orders\")");
      }
      if (deadLetterExchange == null && deadLetters == null) {
        throw new IllegalStateException("a dead-letter exchange is required:"
            + " deadLetterExchange(\"orders.dlx\") (or deadLetters(publisher))");
      }
      return new OnceRabbitListener(this);
    }
  }
}
