package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyKeyTest {

  @Test
  void acceptsTheFullPrintableRangeAndTheLengthBounds() {
    assertThat(IdempotencyKey.of("s", "a").key()).isEqualTo("a");
    assertThat(IdempotencyKey.of("s", "k".repeat(255)).key()).hasSize(255);
    assertThat(IdempotencyKey.of("s", " !~ spaced ").key()).isEqualTo(" !~ spaced ");
    assertThat(IdempotencyKey.of("s".repeat(128), "t".repeat(128), "k").tenant()).hasSize(128);
    assertThat(IdempotencyKey.of("s", "k").tenant()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "   ", "tab\there", "new\nline", "é", "emoji\uD83D\uDE00", "\u007F"})
  void rejectsEmptyBlankAndNonPrintableKeys(String bad) {
    assertThatThrownBy(() -> IdempotencyKey.of("s", bad)).isInstanceOf(InvalidKeyException.class)
        .hasMessageStartingWith("key");
  }

  @Test
  void rejectsOverlongPartsAndNulls() {
    assertThatThrownBy(() -> IdempotencyKey.of("s", "k".repeat(256)))
        .isInstanceOf(InvalidKeyException.class).hasMessageContaining("1–255").hasMessageContaining("256");
    assertThatThrownBy(() -> IdempotencyKey.of("s".repeat(129), "k")).isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> IdempotencyKey.of("s", "t".repeat(129), "k")).isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> IdempotencyKey.of("", "k")).isInstanceOf(InvalidKeyException.class);
    assertThatThrownBy(() -> IdempotencyKey.of("a scope", "k")).isInstanceOf(InvalidKeyException.class)
        .hasMessageContaining("without spaces");
    assertThatThrownBy(() -> IdempotencyKey.of(null, "k")).isInstanceOf(InvalidKeyException.class)
        .hasMessage("scope must not be null");
    assertThatThrownBy(() -> IdempotencyKey.of("s", null)).isInstanceOf(InvalidKeyException.class)
        .hasMessage("key must not be null");
    assertThatThrownBy(() -> IdempotencyKey.of("s", null, "k")).isInstanceOf(InvalidKeyException.class);
  }

  @Test
  void allThreePartsMakeTheIdentity() {
    assertThat(IdempotencyKey.of("s", "t", "k")).isEqualTo(IdempotencyKey.of("s", "t", "k"))
        .hasSameHashCodeAs(IdempotencyKey.of("s", "t", "k"))
        .isNotEqualTo(IdempotencyKey.of("s", "u", "k"))
        .isNotEqualTo(IdempotencyKey.of("r", "t", "k"));
    assertThat(IdempotencyKey.of("s", "t", "k")).hasToString("s[t]/k");
    assertThat(IdempotencyKey.of("s", "k")).hasToString("s/k"); // no tenant: no empty segment
  }
}
