package dev.once.spring.rabbitmq;

import dev.once.rabbitmq.IdempotentRabbitConsumer;
import dev.once.spring.OnceConsumerProperties;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code once.rabbitmq.*} properties: they only pre-fill the
 * {@link dev.once.rabbitmq.spring.OnceRabbitListener.Builder} that {@link OnceRabbitListeners} hands
 * out; every default is the adapter's own. Bound only when once-rabbitmq and spring-rabbit are on
 * the classpath.
 */
@ConfigurationProperties(prefix = "once.rabbitmq")
public class OnceRabbitProperties extends OnceConsumerProperties {

  /** The header holding the idempotency key; unset: the message-id property. */
  private String keyHeader;

  private final DeadLetter deadLetter = new DeadLetter();

  public String getKeyHeader() {
    return keyHeader;
  }

  public void setKeyHeader(String keyHeader) {
    this.keyHeader = keyHeader;
  }

  public DeadLetter getDeadLetter() {
    return deadLetter;
  }

  /** {@code once.rabbitmq.dead-letter.*}: where given-up messages are published, confirmed. */
  public static class DeadLetter {
    /** The exchange dead letters go to (it must exist); required unless set per listener. */
    private String exchange;
    /** Their routing key; unset: the name of the queue the message was consumed from. */
    private String routingKey;
    /** How long to wait for the broker's publisher confirm of a dead letter. */
    private Duration confirmTimeout = IdempotentRabbitConsumer.Builder.DEFAULT_CONFIRM_TIMEOUT;

    public String getExchange() {
      return exchange;
    }

    public void setExchange(String exchange) {
      this.exchange = exchange;
    }

    public String getRoutingKey() {
      return routingKey;
    }

    public void setRoutingKey(String routingKey) {
      this.routingKey = routingKey;
    }

    public Duration getConfirmTimeout() {
      return confirmTimeout;
    }

    public void setConfirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
    }
  }
}
