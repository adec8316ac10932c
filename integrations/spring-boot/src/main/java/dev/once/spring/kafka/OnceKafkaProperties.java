package dev.once.spring.kafka;

import dev.once.kafka.IdempotentConsumer;
import dev.once.kafka.KafkaDeadLetters;
import dev.once.kafka.KeyDerivation;
import dev.once.spring.OnceConsumerProperties;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code once.kafka.*} properties: they only pre-fill the {@link IdempotentConsumer.Builder}
 * that {@link OnceKafkaListeners} hands out, and the dead-letter publisher; every default is the
 * adapter's own. Bound only when once-kafka and spring-kafka are on the classpath.
 */
@ConfigurationProperties(prefix = "once.kafka")
public class OnceKafkaProperties extends OnceConsumerProperties {

  /** The record header holding the idempotency key. */
  private String keyHeader = KeyDerivation.DEFAULT_HEADER;

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

  /** {@code once.kafka.dead-letter.*}: the publisher over the context's KafkaTemplate. */
  public static class DeadLetter {
    /** Appended to a record's topic to name its dead-letter topic: orders → orders-dlt. */
    private String topicSuffix = KafkaDeadLetters.DEFAULT_SUFFIX;
    /** How long a dead letter's send waits for the broker's acknowledgement. */
    private Duration sendTimeout = KafkaDeadLetters.SEND_TIMEOUT;

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
