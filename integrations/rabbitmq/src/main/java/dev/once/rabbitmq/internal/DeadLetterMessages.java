package dev.once.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.LongString;
import dev.once.batch.DeadLetter;
import dev.once.rabbitmq.DeadLetterHeaders;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** The properties of a dead letter and header values as text. Not API. */
public final class DeadLetterMessages {

  /** Exception messages are cut to this: headers share a frame with the other properties. */
  static final int MAX_EXCEPTION_MESSAGE = 4_000;
  private static final int PERSISTENT = 2;

  private DeadLetterMessages() {}

  /** Where a message came from, for the dead letter's headers. */
  public record Origin(String exchange, String routingKey, String queue, String messageId) {}

  /**
   * The original properties with the dead letter's headers added, made persistent: a dead letter
   * must survive a broker restart once confirmed.
   */
  public static AMQP.BasicProperties properties(AMQP.BasicProperties original, Origin origin,
      DeadLetter<?> letter) {
    AMQP.BasicProperties base = original == null ? new AMQP.BasicProperties() : original;
    Map<String, Object> headers = base.getHeaders() == null ? new HashMap<>()
        : new HashMap<>(base.getHeaders());
    put(headers, DeadLetterHeaders.ORIGINAL_EXCHANGE, origin.exchange());
    put(headers, DeadLetterHeaders.ORIGINAL_ROUTING_KEY, origin.routingKey());
    put(headers, DeadLetterHeaders.ORIGINAL_QUEUE, origin.queue());
    put(headers, DeadLetterHeaders.MESSAGE_ID, origin.messageId());
    put(headers, DeadLetterHeaders.IDEMPOTENCY_KEY,
        letter.key() == null ? null : letter.key().key());
    put(headers, DeadLetterHeaders.REASON, letter.reason().name());
    put(headers, DeadLetterHeaders.EXCEPTION_CLASS, letter.exceptionClass());
    String message = letter.exceptionMessage();
    put(headers, DeadLetterHeaders.EXCEPTION_MESSAGE, message.length() > MAX_EXCEPTION_MESSAGE
        ? message.substring(0, MAX_EXCEPTION_MESSAGE) : message);
    headers.put(DeadLetterHeaders.ATTEMPTS, letter.attempts());
    return base.builder().headers(headers).deliveryMode(PERSISTENT).build();
  }

  private static void put(Map<String, Object> headers, String name, String value) {
    if (value == null) {
      headers.remove(name); // a stale value from an earlier dead-lettering must not survive
    } else {
      headers.put(name, value);
    }
  }

  /**
   * A header value as text: AMQP strings arrive as {@link LongString}, byte arrays are read as
   * UTF-8, anything else by {@code toString}; null stays null.
   */
  public static String text(Object value) {
    if (value == null) {
      return null;
    }
    if (value instanceof LongString s) {
      return s.toString();
    }
    if (value instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    return value.toString();
  }
}
