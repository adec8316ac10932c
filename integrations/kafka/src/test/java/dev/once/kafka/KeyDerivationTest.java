package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.InMemoryStore;
import dev.once.InvalidKeyException;
import dev.once.Once;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/** Key derivations and builder checks: pure functions, no broker needed. */
class KeyDerivationTest {

  private static ConsumerRecord<String, String> record(String value, String header) {
    ConsumerRecord<String, String> r = new ConsumerRecord<>("t", 0, 0L, "k", value);
    if (header != null) {
      r.headers().add(KeyDerivation.DEFAULT_HEADER, header.getBytes(StandardCharsets.UTF_8));
    }
    return r;
  }

  @Test
  void headerThenFallback() {
    KeyDerivation<String, String> keys = KeyDerivation.<String, String>header("idempotency-key")
        .orElse(KeyDerivation.field(v -> v.split(":")[0]));
    assertThat(keys.keyOf(record("order-1:paid", "h-1"))).isEqualTo("h-1");
    assertThat(keys.keyOf(record("order-1:paid", null))).isEqualTo("order-1");
    assertThat(keys.keyOf(record("order-1:paid", ""))).as("an empty header is no key")
        .isEqualTo("order-1");
    assertThat(keys.keyOf(record(null, null))).isNull();
  }

  @Test
  void sha256OfTheValueIsStableAndHex() {
    KeyDerivation<String, String> keys = KeyDerivation.sha256OfValue();
    assertThat(keys.keyOf(record("abc", null)))
        .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assertThat(keys.keyOf(record(null, null))).isNull();
    KeyDerivation<String, List<Integer>> notBytes = KeyDerivation.sha256OfValue();
    assertThatThrownBy(() -> notBytes.keyOf(new ConsumerRecord<>("t", 0, 0L, "k", List.of(1))))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sha256Of(");
  }

  @Test
  void builderRefusesBadSettingsAtOnce() {
    Once once = Once.builder(new InMemoryStore()).build();
    IdempotentConsumer.Builder<String, String> builder =
        IdempotentConsumer.builder(once, (r, a) -> {});
    assertThatThrownBy(builder::build).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("dead-letter publisher is required");
    assertThatThrownBy(() -> builder.scope("has space")).isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> builder.config(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> builder.pollTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    IdempotentConsumer<String, String> noScope = builder.deadLetters(letter -> {}).build();
    assertThatThrownBy(() -> noScope.process(List.of(record("v", "k"))))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no scope");
    assertThatThrownBy(() -> noScope.process(List.of(record("v", "k")), "group with spaces"))
        .isInstanceOf(InvalidKeyException.class).hasMessageContaining("set a scope");
  }
}
