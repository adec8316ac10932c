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
   * A {@link JsonCodec} for {@code type}, which may be generic ({@code List<Charge>}). Whatever
   * its {@code encode} throws (a getter's {@code Error} too) finishes the key with the "not
   * stored" marker: Once catches it.
   */
  @SuppressWarnings("unchecked")
  static Codec<Object> of(ObjectMapper mapper, Type type) {
    TypeReference<Object> reference = new TypeReference<>() {
      @Override
      public Type getType() {
        return type;
      }
    };
    return (Codec<Object>) (Codec<?>) JsonCodec.of(mapper, reference);
  }
}
