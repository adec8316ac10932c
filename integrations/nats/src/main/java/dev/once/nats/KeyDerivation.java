package dev.once.nats;

import io.nats.client.Message;
import io.nats.client.impl.Headers;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;

/**
 * Derives the idempotency key of a JetStream message, or answers null when the message carries
 * none. The key must be 1–255 printable ASCII characters; anything else counts as no key (see
 * {@link dev.once.batch.BatchConfig#noKeyPolicy}).
 *
 * <pre>{@code
 * KeyDerivation.header("Idempotency-Key").orElse(KeyDerivation.sha256OfData())
 * }</pre>
 */
@FunctionalInterface
public interface KeyDerivation {

  /**
   * The header read by default: the message id JetStream itself deduplicates publishes by within
   * the stream's duplicate window.
   */
  String DEFAULT_HEADER = "Nats-Msg-Id";

  /** The key of {@code message}, or null when it has none. */
  String keyOf(Message message);

  /** This derivation, and {@code fallback} for messages where it answers null. */
  default KeyDerivation orElse(KeyDerivation fallback) {
    Objects.requireNonNull(fallback, "fallback");
    return message -> {
      String key = keyOf(message);
      return key != null ? key : fallback.keyOf(message);
    };
  }

  /** The last value of the header {@code name} (exact case); null when absent or empty. */
  static KeyDerivation header(String name) {
    Objects.requireNonNull(name, "name");
    return message -> {
      Headers headers = message.getHeaders();
      if (headers == null) {
        return null;
      }
      String value = headers.getLast(name);
      return value == null || value.isEmpty() ? null : value;
    };
  }

  /**
   * The SHA-256 of the payload, as 64 hex characters: for events without an id, where two messages
   * with the same bytes are the same event. An empty payload has no key.
   */
  static KeyDerivation sha256OfData() {
    return message -> {
      byte[] data = message.getData();
      if (data == null || data.length == 0) {
        return null;
      }
      try {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every Java platform must provide SHA-256", e);
      }
    };
  }

  /**
   * The message's stream and stream sequence ({@code ORDERS:42}): one key per stored message.
   * Covers redeliveries (a consumer that died before its ack) but not a producer that published
   * the same event twice: prefer an id the producer sets, with this as a fallback.
   */
  static KeyDerivation streamSequence() {
    return message -> message.isJetStream()
        ? message.metaData().getStream() + ":" + message.metaData().streamSequence()
        : null;
  }
}
