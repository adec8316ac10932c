package dev.once.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.once.Codec;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonCodecTest {

  record Charge(String id, long amountCents, String currency) {}

  @JsonTypeInfo(use = JsonTypeInfo.Id.NAME)
  @JsonSubTypes({@JsonSubTypes.Type(value = Card.class, name = "card"),
      @JsonSubTypes.Type(value = Transfer.class, name = "transfer")})
  sealed interface Payment permits Card, Transfer {}

  record Card(String last4) implements Payment {}

  record Transfer(String iban) implements Payment {}

  /** Jackson finds nothing to serialize here. */
  static final class Opaque {}

  private static final Charge CHARGE = new Charge("ch_1", 1250, "EUR");

  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  @Test
  void mediaTypeIsJson() {
    assertThat(JsonCodec.of(Charge.class).mediaType()).isEqualTo("application/json");
  }

  @Test
  void roundTripsARecord() {
    Codec<Charge> codec = JsonCodec.of(Charge.class);
    byte[] stored = codec.encode(CHARGE);
    assertThat(text(stored)).isEqualTo("{\"id\":\"ch_1\",\"amountCents\":1250,\"currency\":\"EUR\"}");
    assertThat(codec.decode(stored)).isEqualTo(CHARGE);
  }

  @Test
  void roundTripsAGenericListViaTypeReference() {
    Codec<List<Charge>> codec =
        JsonCodec.of(new ObjectMapper(), new TypeReference<List<Charge>>() {});
    List<Charge> charges = List.of(CHARGE, new Charge("ch_2", 99, "USD"));
    List<Charge> decoded = codec.decode(codec.encode(charges));
    assertThat(decoded).isEqualTo(charges);
    assertThat(decoded.get(0)).isInstanceOf(Charge.class);
  }

  @Test
  void keepsPolymorphicElementTypesOfTheDeclaredType() {
    Codec<List<Payment>> codec =
        JsonCodec.of(new ObjectMapper(), new TypeReference<List<Payment>>() {});
    List<Payment> payments = List.of(new Card("4242"), new Transfer("DE89"));
    assertThat(codec.decode(codec.encode(payments))).isEqualTo(payments);
  }

  @Test
  void usesTheGivenMapper() {
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
    Codec<Map<String, Integer>> codec = JsonCodec.of(mapper, new TypeReference<>() {});
    assertThat(text(codec.encode(Map.of("b", 2, "a", 1)))).isEqualTo("{\"a\":1,\"b\":2}");
    assertThat(JsonCodec.of(mapper, Charge.class).decode(JsonCodec.of(Charge.class).encode(CHARGE)))
        .isEqualTo(CHARGE);
  }

  @Test
  void roundTripsNull() {
    Codec<Charge> codec = JsonCodec.of(Charge.class);
    assertThat(text(codec.encode(null))).isEqualTo("null");
    assertThat(codec.decode(codec.encode(null))).isNull();
    Codec<List<Charge>> lists =
        JsonCodec.of(new ObjectMapper(), new TypeReference<List<Charge>>() {});
    assertThat(lists.decode(lists.encode(null))).isNull();
  }

  @Test
  void encodingFailureNamesTheType() {
    Codec<Opaque> codec = JsonCodec.of(Opaque.class);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> codec.encode(new Opaque()))
        .withMessageStartingWith("cannot encode " + Opaque.class.getName() + " as JSON")
        .withCauseInstanceOf(com.fasterxml.jackson.core.JsonProcessingException.class);
  }

  @Test
  void decodingGarbageFailsAsStoredOutcomeNotValid() {
    Codec<Charge> codec = JsonCodec.of(Charge.class);
    for (String stored : new String[] {"", "not json", "{\"id\":", "[1,2]", "{\"id\":\"x\"} {}"}) {
      assertThatIllegalStateException()
          .as(stored)
          .isThrownBy(() -> codec.decode(stored.getBytes(StandardCharsets.UTF_8)))
          .withMessage("stored outcome is not valid JSON for " + Charge.class.getName())
          .withCauseInstanceOf(com.fasterxml.jackson.core.JsonProcessingException.class);
    }
  }

  @Test
  void decodingFailureOfAGenericTypeNamesTheFullType() {
    Codec<List<Charge>> codec =
        JsonCodec.of(new ObjectMapper(), new TypeReference<List<Charge>>() {});
    assertThatIllegalStateException()
        .isThrownBy(() -> codec.decode("{}".getBytes(StandardCharsets.UTF_8)))
        .withMessage("stored outcome is not valid JSON for java.util.List<"
            + Charge.class.getName() + ">");
  }

  @Test
  void rejectsNullArguments() {
    assertThatNullPointerException().isThrownBy(() -> JsonCodec.of((Class<Charge>) null));
    assertThatNullPointerException().isThrownBy(() -> JsonCodec.of(null, Charge.class));
    assertThatNullPointerException()
        .isThrownBy(() -> JsonCodec.of(new ObjectMapper(), (TypeReference<Charge>) null));
  }

  @Test
  void describesItself() {
    assertThat(JsonCodec.of(Charge.class)).hasToString("JsonCodec[" + Charge.class.getName() + "]");
  }
}
