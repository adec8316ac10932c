package dev.once.kafka;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Derives the idempotency key of a record, or answers null when the record carries none. The key
 * must be 1–255 printable ASCII characters; anything else counts as no key (see {@link dev.once.batch.NoKeyPolicy}).
 *
 * <pre>{@code
 * KeyDerivation.<String, Order>header("idempotency-key")
 *     .orElse(KeyDerivation.field(Order::orderId))
 * }</pre>
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
@FunctionalInterface
public interface KeyDerivation<K, V> {

  /** The header read by default. */
  String DEFAULT_HEADER = "idempotency-key";

  /** The key of {@code record}, or null when it has none. */
  String keyOf(ConsumerRecord<K, V> record);

  /** This derivation, and {@code fallback} for records where it answers null. */
  default KeyDerivation<K, V> orElse(KeyDerivation<K, V> fallback) {
    Objects.requireNonNull(fallback, "fallback");
    return record -> {
      String key = keyOf(record);
      return key != null ? key : fallback.keyOf(record);
    };
  }

  /** The UTF-8 value of the last header called {@code name}; null when absent or empty. */
  static <K, V> KeyDerivation<K, V> header(String name) {
    Objects.requireNonNull(name, "name");
    return record -> {
      Header header = record.headers().lastHeader(name);
      if (header == null || header.value() == null || header.value().length == 0) {
        return null;
      }
      return new String(header.value(), StandardCharsets.UTF_8);
    };
  }

  /** A field of the (deserialized) value; null when the value is null or the field is. */
  static <K, V> KeyDerivation<K, V> field(Function<? super V, String> field) {
    Objects.requireNonNull(field, "field");
    return record -> record.value() == null ? null : field.apply(record.value());
  }

  /**
   * The SHA-256 of the value, as 64 hex characters: for events without an id, where two records
   * with the same bytes are the same event. The value must be a {@code byte[]}, {@code String} or
   * {@link ByteBuffer}; a null value has no key.
   *
   * @throws IllegalArgumentException (when deriving) for a value of another type: use
   *     {@link #sha256Of(Function)}
   */
  static <K, V> KeyDerivation<K, V> sha256OfValue() {
    return sha256Of(value -> {
      if (value instanceof byte[] bytes) {
        return bytes;
      }
      if (value instanceof String text) {
        return text.getBytes(StandardCharsets.UTF_8);
      }
      if (value instanceof ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
      }
      throw new IllegalArgumentException("sha256OfValue() needs a byte[], String or ByteBuffer"
          + " value, got " + value.getClass().getName() + ": use sha256Of(serializer)");
    });
  }

  /** The SHA-256 of the bytes {@code bytes} makes of the value, as 64 hex characters. */
  static <K, V> KeyDerivation<K, V> sha256Of(Function<? super V, byte[]> bytes) {
    Objects.requireNonNull(bytes, "bytes");
    return record -> {
      if (record.value() == null) {
        return null;
      }
      try {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        return HexFormat.of().formatHex(md.digest(bytes.apply(record.value())));
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every Java platform must provide SHA-256", e);
      }
    };
  }
}
