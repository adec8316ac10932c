package dev.once;

/**
 * Turns a result into the bytes stored as the outcome, and back for replays. {@code once-jackson}
 * provides a JSON codec; {@link Codecs} has the JDK-only ones.
 *
 * @param <T> the result type
 */
public interface Codec<T> {

  /** The media type stored next to the bytes, e.g. {@code application/json}. */
  String mediaType();

  /** Encodes a result. Must be deterministic enough that a replay decodes to an equal value. */
  byte[] encode(T value);

  /** Decodes what {@link #encode} wrote. */
  T decode(byte[] bytes);
}
