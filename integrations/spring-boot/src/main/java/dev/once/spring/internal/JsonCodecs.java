package dev.once.spring.internal;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.once.Codec;
import dev.once.jackson.JsonCodec;
import java.lang.reflect.Type;

/** JSON codecs for reflected (generic) types, and the mapper used when the context has none. */
final class JsonCodecs {

  private JsonCodecs() {}

  /** A mapper with the Jackson 2 modules found on the classpath, lenient to fields it does not know. */
  static ObjectMapper defaultMapper() {
    return JsonMapper.builder()
        .findAndAddModules()
        // A stored outcome written before a field was removed must still replay.
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .build();
  }

  /**
   * A {@link JsonCodec} for {@code type}, which may be generic ({@code List<Charge>}), whose
   * {@code encode} throws nothing but {@link RuntimeException}s (see {@link EncodeFailures}).
   */
  @SuppressWarnings("unchecked")
  static Codec<Object> of(ObjectMapper mapper, Type type) {
    TypeReference<Object> reference = new TypeReference<>() {
      @Override
      public Type getType() {
        return type;
      }
    };
    return new EncodeFailures((Codec<Object>) (Codec<?>) JsonCodec.of(mapper, reference), type);
  }

  /**
   * Turns an {@link Error} thrown while encoding (a getter's {@code AssertionError}, an
   * {@code ExceptionInInitializerError}, which Jackson passes through unwrapped) into an
   * {@link IllegalArgumentException}. Once completes the key with the "not stored" marker for a
   * value whose encoding throws an exception; an error would instead leave the claim in progress
   * until its lease passed and the method ran again. The JVM's own errors
   * ({@link VirtualMachineError}) pass unchanged.
   */
  static final class EncodeFailures implements Codec<Object> {
    private final Codec<Object> json;
    private final Type type;

    EncodeFailures(Codec<Object> json, Type type) {
      this.json = json;
      this.type = type;
    }

    @Override
    public String mediaType() {
      return json.mediaType();
    }

    @Override
    public byte[] encode(Object value) {
      try {
        return json.encode(value);
      } catch (VirtualMachineError e) {
        throw e;
      } catch (Error e) {
        throw new IllegalArgumentException("cannot encode " + type.getTypeName() + " as JSON: "
            + e, e);
      }
    }

    @Override
    public Object decode(byte[] bytes) {
      return json.decode(bytes);
    }

    @Override
    public String toString() {
      return json.toString();
    }
  }
}
