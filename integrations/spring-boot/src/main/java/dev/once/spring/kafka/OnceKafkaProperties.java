package dev.once.spring.kafka;

import dev.once.kafka.DeadLetterPublisher;
import dev.once.kafka.IdempotentConsumer;
import dev.once.kafka.KeyDerivation;
import dev.once.kafka.NoKeyPolicy;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code once.kafka.*} properties: they only pre-fill the {@link IdempotentConsumer.Builder}
 * that {@link OnceKafkaListeners} hands out, and the dead-letter publisher; every default is the
 * adapter's own. Bound only when once-kafka and spring-kafka are on the classpath.
 */
@ConfigurationProperties(prefix = "once.kafka")
public class OnceKafkaProperties {

  /** Make the OnceKafkaListeners bean (with once-kafka, spring-kafka and a Once bean). */
  private boolean enabled = true;

  /**
   * The scope of the idempotency keys of every listener made; unset: each container's consumer
   * group id (the adapter's default).
   */
  private String scope;

  /** The record header holding the idempotency key. */
  private String keyHeader = KeyDerivation.DEFAULT_HEADER;

  /** What to do with a record without a key: dead-letter (the default) or process-unprotected. */
  private NoKeyPolicy noKeyPolicy = NoKeyPolicy.DEAD_LETTER;

  /** How many times a handler may fail retryably before the record is dead-lettered. */
  private int maxAttempts = IdempotentConsumer.Builder.DEFAULT_MAX_ATTEMPTS;

  /** How long before looking again at a record in progress on another consumer. */
  private Duration inProgressBackoff = IdempotentConsumer.Builder.DEFAULT_IN_PROGRESS_BACKOFF;

  /** One claim per poll batch (true), or one per record just before it runs (false). */
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

  /** {@code once.kafka.retry-backoff.*}: the pause after a retryable failure, doubling. */
  public static class RetryBackoff {
    /** The first pause. */
    private Duration initial = IdempotentConsumer.Builder.DEFAULT_INITIAL_BACKOFF;
    /** The longest pause. */
    private Duration max = IdempotentConsumer.Builder.DEFAULT_MAX_BACKOFF;

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

  /** {@code once.kafka.dead-letter.*}: the publisher over the context's KafkaTemplate. */
  public static class DeadLetter {
    /** Appended to a record's topic to name its dead-letter topic: orders → orders-dlt. */
    private String topicSuffix = DeadLetterPublisher.DEFAULT_SUFFIX;
    /** How long a dead letter's send waits for the broker's acknowledgement. */
    private Duration sendTimeout = DeadLetterPublisher.SEND_TIMEOUT;

    public String getTopicSuffix() {
      return topicSuffix;
    }

    public void setTopicSuffix(String topicSuffix) {
      this.topicSuffix = topicSuffix;
    }

    public Duration getSendTimeout() {
      return sendTimeout;
    }

    public void setSendTimeout(Duration sendTimeout) {
      this.sendTimeout = sendTimeout;
    }
  }
}
