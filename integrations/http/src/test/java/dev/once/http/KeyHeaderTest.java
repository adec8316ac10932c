package dev.once.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KeyHeaderTest {

  static KeyHeader.Parsed parse(String value) {
    return KeyHeader.parse(value, "Idempotency-Key");
  }

  @Test
  void acceptsTheDraftsSfStringAndABareToken() {
    assertThat(parse("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"").key())
        .isEqualTo("8e03978e-40d5-43e8-bc93-6894a57f9324");
    assertThat(parse("8e03978e-40d5-43e8-bc93-6894a57f9324").key())
        .isEqualTo("8e03978e-40d5-43e8-bc93-6894a57f9324");
    assertThat(parse("  abc\t").key()).isEqualTo("abc");
  }

  @Test
  void unescapesQuotesAndBackslashesAndKeepsInnerSpaces() {
    assertThat(parse("\"a \\\"b\\\" \\\\ c\"").key()).isEqualTo("a \"b\" \\ c");
  }

  @Test
  void acceptsExactly255Characters() {
    assertThat(parse("k".repeat(255)).valid()).isTrue();
    assertThat(parse("\"" + "k".repeat(255) + "\"").valid()).isTrue();
    assertThat(parse("k".repeat(256)).problem()).contains("256");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "   ", "\"\"", "\"  \"", "\"abc", "\"abc\" x", "\"abc\";a=1",
      "\"a\\b\"", "\"a\\\"", "a b", "a\"b", "a,b", "a\\b", "caf\u00e9", "\"caf\u00e9\"", "a\u0001b",
      "\"a\tb\""})
  void refusesMalformedValues(String value) {
    KeyHeader.Parsed parsed = parse(value);
    assertThat(parsed.valid()).isFalse();
    assertThat(parsed.missing()).isFalse();
    assertThat(parsed.problem()).startsWith("Idempotency-Key");
  }

  @Test
  void tellsAbsentFromRepeated() {
    assertThat(KeyHeader.parse(List.of(), "Idempotency-Key").missing())
        .isTrue();
    assertThat(KeyHeader.parse((List<String>) null, "Idempotency-Key").missing()).isTrue();
    KeyHeader.Parsed twice = KeyHeader.parse(List.of("a", "b"),
        "Idempotency-Key");
    assertThat(twice.valid()).isFalse();
    assertThat(twice.problem()).contains("more than once");
  }
}
