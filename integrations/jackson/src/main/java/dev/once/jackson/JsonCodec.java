package dev.once.jackson;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import dev.once.Codec;
import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Objects;

/**
 * Stores a result as JSON, so that outcomes are readable in the store and replays decode to an
 * equal value. Media type {@code application/json}. A {@code null} result is stored as JSON
 * {@code null} and replayed as {@code null}.
 *
 * <p>The codec reads and writes the declared type (not the runtime class), so generic types given
 * as a {@link TypeReference} keep their element types. It is immutable and thread-safe; make one
 * per result type and share it.
 *
 * <pre>{@code
 * Codec<Charge> charges = JsonCodec.of(Charge.class);
 * Codec<List<Charge>> lists = JsonCodec.of(mapper, new TypeReference<List<Charge>>() {});
 * }</pre>
 *
 * @param <T> the result type
 */
public final class JsonCodec<T> implements Codec<T> {

  private static final String MEDIA_TYPE = "application/json";

  /** Shared by {@link #of(Class)}: a plain mapper, never handed out, so never reconfigured. */
  private static final ObjectMapper DEFAULT_MAPPER = new ObjectMapper();

  private final String typeName;
  private final ObjectReader reader;
  private final ObjectWriter writer;

  private JsonCodec(ObjectMapper mapper, JavaType type, Type declared) {
    this.typeName = declared.getTypeName();
    // Stored outcomes are written by encode, so anything after the value means corruption.
    this.reader = mapper.readerFor(type).with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    this.writer = mapper.writerFor(type);
  }

  /** A codec for {@code type} on a plain default mapper. */
  public static <T> JsonCodec<T> of(Class<T> type) {
    return of(DEFAULT_MAPPER, type);
  }

  /** A codec for {@code type} on {@code mapper}, with the mapper's modules and settings. */
  public static <T> JsonCodec<T> of(ObjectMapper mapper, Class<T> type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new JsonCodec<>(mapper, mapper.getTypeFactory().constructType(type), type);
  }

  /** A codec for a generic type such as {@code List<Charge>}, on {@code mapper}. */
  public static <T> JsonCodec<T> of(ObjectMapper mapper, TypeReference<T> type) {
    Objects.requireNonNull(mapper, "mapper");
    Objects.requireNonNull(type, "type");
    return new JsonCodec<>(mapper, mapper.getTypeFactory().constructType(type), type.getType());
  }

  @Override
  public String mediaType() {
    return MEDIA_TYPE;
  }

  /**
   * Writes {@code value} as JSON.
   *
   * @throws IllegalArgumentException if Jackson cannot serialize the value
   */
  @Override
  public byte[] encode(T value) {
    try {
      return writer.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "cannot encode " + typeName + " as JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * Reads what {@link #encode} wrote.
   *
   * @throws IllegalStateException if the stored bytes are not JSON for this codec's type
   */
  @Override
  public T decode(byte[] bytes) {
    Objects.requireNonNull(bytes, "bytes");
    try {
      return reader.readValue(bytes);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalStateException("stored outcome is not valid JSON for " + typeName, e);
    }
  }

  @Override
  public String toString() {
    return "JsonCodec[" + typeName + "]";
  }
}
