package dev.once.spring.rabbitmq;

import dev.once.batch.BatchExecutor;
import dev.once.batch.NoKeyPolicy;
import dev.once.rabbitmq.IdempotentRabbitConsumer;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code once.rabbitmq.*} properties: they only pre-fill the
 * {@link dev.once.rabbitmq.spring.OnceRabbitListener.Builder} that {@link OnceRabbitListeners} hands
 * out; every default is the adapter's own. Bound only when once-rabbitmq and spring-rabbit are on
 * the classpath.
 */
@ConfigurationProperties(prefix = "once.rabbitmq")
public class OnceRabbitProperties {

  /** Make the OnceRabbitListeners bean (with once-rabbitmq, spring-rabbit and a Once bean). */
  private boolean enabled = true;

  /** The scope of the idempotency keys of every listener made; unset: given per listener. */
  private String scope;

  /** The header holding the idempotency key; unset: the message-id property. */
  private String keyHeader;

  /** What to do with a message without a key: dead-letter (the default) or process-unprotected. */
  private NoKeyPolicy noKeyPolicy = NoKeyPolicy.DEAD_LETTER;

  /** How many times a handler may fail retryably before the message is dead-lettered. */
  private int maxAttempts = BatchExecutor.Builder.DEFAULT_MAX_ATTEMPTS;

  /** How long to hold a message in progress on another consumer before it is requeued. */
  private Duration inProgressBackoff = BatchExecutor.Builder.DEFAULT_IN_PROGRESS_BACKOFF;

  /** One claim per batch the container hands over (true), or one per message (false). */
  private boolean batchClaims = true;

  private final RetryBackoff retryBackoff = new RetryBackoff();
  private final DeadLetter deadLetter = new DeadLetter();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getScope() {
    return scope;
  }

  public void setScope(String scope) {
    this.scope = scope;
  }

  public String getKeyHeader() {
    return keyHeader;
  }

  public void setKeyHeader(String keyHeader) {
    this.keyHeader = keyHeader;
  }

  public NoKeyPolicy getNoKeyPolicy() {
    return noKeyPolicy;
  }

  public void setNoKeyPolicy(NoKeyPolicy noKeyPolicy) {
    this.noKeyPolicy = noKeyPolicy;
  }

  public int getMaxAttempts() {
    return maxAttempts;
  }

  public void setMaxAttempts(int maxAttempts) {
    this.maxAttempts = maxAttempts;
  }

  public Duration getInProgressBackoff() {
    return inProgressBackoff;
  }

  public void setInProgressBackoff(Duration inProgressBackoff) {
    this.inProgressBackoff = inProgressBackoff;
  }

  public boolean isBatchClaims() {
    return batchClaims;
  }

  public void setBatchClaims(boolean batchClaims) {
    this.batchClaims = batchClaims;
  }

  public RetryBackoff getRetryBackoff() {
    return retryBackoff;
  }

  public DeadLetter getDeadLetter() {
    return deadLetter;
  }

  /** {@code once.rabbitmq.retry-backoff.*}: how long a failed message is held, doubling. */
  public static class RetryBackoff {
    /** The first hold. */
    private Duration initial = BatchExecutor.Builder.DEFAULT_INITIAL_BACKOFF;
    /** The longest hold. */
    private Duration max = BatchExecutor.Builder.DEFAULT_MAX_BACKOFF;

    public Duration getInitial() {
      return initial;
    }

    public void setInitial(Duration initial) {
      this.initial = initial;
    }

    public Duration getMax() {
      return max;
    }

    public void setMax(Duration max) {
      this.max = max;
    }
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
