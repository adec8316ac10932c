package dev.once.spring.rabbitmq;

import dev.once.Once;
import dev.once.batch.MessageHandler;
import dev.once.rabbitmq.spring.OnceRabbitListener;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.springframework.amqp.core.Message;

/**
 * Makes idempotent Spring AMQP listeners ({@link OnceRabbitListener}) from a handler, with the
 * context's {@link Once} and the {@code once.rabbitmq.*} {@link OnceRabbitProperties}. Plug a
 * listener into a container whose acknowledge mode is {@code MANUAL} (the listener acknowledges
 * only what is final, and refuses any other mode). A container bean (a {@code @Bean} method)
 * from Spring Boot's factory:
 *
 * <pre>{@code
 * SimpleMessageListenerContainer orders(SimpleRabbitListenerContainerFactory factory,
 *     OnceRabbitListeners once) {
 *   SimpleMessageListenerContainer container = factory.createListenerContainer();
 *   container.setQueueNames("orders");
 *   container.setAcknowledgeMode(AcknowledgeMode.MANUAL);
 *   container.setMessageListener(once.listener("orders",
 *       (Message message, Attempt attempt) -> shipping.ship(message.getBody(), attempt.key())));
 *   return container;
 * }
 * }</pre>
 *
 * The listeners made by {@link #listener} are closed (their held messages requeued, their
 * dead-letter channels closed) when this bean is, after the context's containers have stopped.
 */
public final class OnceRabbitListeners implements AutoCloseable {

  private final Once once;
  private final OnceRabbitProperties properties;
  private final List<OnceRabbitListener> made = new ArrayList<>();

  /**
   * Listeners over {@code once}, pre-filled from {@code properties}.
   *
   * @throws IllegalArgumentException if a property is invalid (the builder's message)
   */
  public OnceRabbitListeners(Once once, OnceRabbitProperties properties) {
    this.once = Objects.requireNonNull(once, "once");
    this.properties = Objects.requireNonNull(properties, "properties");
    builder((message, attempt) -> { }); // bad properties fail now, at startup
  }

  /**
   * A builder for {@code handler}, pre-filled: the {@code Once}, the scope (if
   * {@code once.rabbitmq.scope} is set), the key source, the {@code BatchConfig} (no-key policy,
   * max attempts, backoffs, batch claims) and the dead-letter exchange, routing key and confirm timeout. Anything may be
   * set again before {@link OnceRabbitListener.Builder#build()} (to change one engine setting and
   * keep the properties' others: {@code .config(properties.toBatchConfig().toBuilder()...build())},
   * with the {@link OnceRabbitProperties} bean). A listener built from it is the
   * caller's to close after its container stops (a {@code @Bean}'s is closed by the context).
   */
  public OnceRabbitListener.Builder builder(MessageHandler<Message> handler) {
    OnceRabbitListener.Builder builder = OnceRabbitListener.builder(once, handler)
        .config(properties.toBatchConfig())
        .confirmTimeout(properties.getDeadLetter().getConfirmTimeout());
    if (hasText(properties.getKeyHeader())) {
      builder.keyFromHeader(properties.getKeyHeader());
    } else {
      builder.keyFromMessageId();
    }
    if (hasText(properties.getScope())) {
      builder.scope(properties.getScope());
    }
    if (hasText(properties.getDeadLetter().getExchange())) {
      builder.deadLetterExchange(properties.getDeadLetter().getExchange());
    }
    if (hasText(properties.getDeadLetter().getRoutingKey())) {
      builder.deadLetterRoutingKey(properties.getDeadLetter().getRoutingKey());
    }
    return builder;
  }

  /**
   * A listener running {@code handler} once per key, its keys scoped by {@code scope} (e.g. the
   * queue's name), dead-lettering to {@code once.rabbitmq.dead-letter.exchange}; closed with this
   * bean.
   *
   * @throws IllegalStateException if {@code once.rabbitmq.dead-letter.exchange} is not set (use
   *                               {@link #builder} to give one per listener)
   */
  public OnceRabbitListener listener(String scope, MessageHandler<Message> handler) {
    Objects.requireNonNull(scope, "scope");
    if (!hasText(properties.getDeadLetter().getExchange())) {
      throw new IllegalStateException("no dead-letter exchange: set"
          + " once.rabbitmq.dead-letter.exchange, or give one per listener with"
          + " builder(handler).deadLetterExchange(...)");
    }
    OnceRabbitListener listener = builder(handler).scope(scope).build();
    synchronized (made) {
      made.add(listener);
    }
    return listener;
  }

  /** The {@link Once} the listeners claim through. */
  public Once once() {
    return once;
  }

  /**
   * Closes every listener {@link #listener} made: their held messages are requeued and their
   * dead-letter channels closed. The context calls it when it closes, after its containers have
   * stopped. Idempotent.
   */
  @Override
  public void close() {
    List<OnceRabbitListener> all;
    synchronized (made) {
      all = List.copyOf(made);
      made.clear();
    }
    all.forEach(OnceRabbitListener::close);
  }

  private static boolean hasText(String s) {
    return s != null && !s.isBlank();
  }
}
