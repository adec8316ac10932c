package dev.once.spring.internal;

import dev.once.Codec;
import java.util.Optional;

/** An {@code Optional<T>} stored as its value's JSON, or JSON {@code null} when empty. */
final class OptionalCodec implements Codec<Object> {

  private final Codec<Object> element;

  OptionalCodec(Codec<Object> element) {
    this.element = element;
  }

  @Override
  public String mediaType() {
    return element.mediaType();
  }

  @Override
  public byte[] encode(Object value) {
    Optional<?> optional = (Optional<?>) value;
    return element.encode(optional == null ? null : optional.orElse(null));
  }

  @Override
  public Object decode(byte[] bytes) {
    return Optional.ofNullable(element.decode(bytes));
  }
}
