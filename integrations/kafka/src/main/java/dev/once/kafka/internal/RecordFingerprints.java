package dev.once.kafka.internal;

import dev.once.Fingerprint;
import java.nio.ByteBuffer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** The default fingerprint of a record. Not API. */
public final class RecordFingerprints {

  private static final Fingerprint NO_VALUE = Fingerprint.ofParts("once-kafka", "no value");
  private static final Fingerprint OPAQUE = Fingerprint.ofParts("once-kafka", "opaque value");

  private RecordFingerprints() {}

  /**
   * SHA-256 of the value for {@code byte[]}, {@code String} and {@code ByteBuffer}; a constant for
   * null and for other types, whose bytes are unknown here (hashing their {@code toString} could
   * differ between deliveries of the same record and dead-letter them as reused keys).
   */
  public static Fingerprint ofValue(ConsumerRecord<?, ?> record) {
    Object value = record.value();
    if (value == null) {
      return NO_VALUE;
    }
    if (value instanceof byte[] bytes) {
      return Fingerprint.of(bytes);
    }
    if (value instanceof String text) {
      return Fingerprint.of(text);
    }
    if (value instanceof ByteBuffer buffer) {
      ByteBuffer copy = buffer.duplicate();
      byte[] bytes = new byte[copy.remaining()];
      copy.get(bytes);
      return Fingerprint.of(bytes);
    }
    return OPAQUE;
  }
}
