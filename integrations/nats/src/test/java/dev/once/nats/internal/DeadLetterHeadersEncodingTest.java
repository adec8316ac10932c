package dev.once.nats.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.nats.client.impl.Headers;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Exception messages become header values NATS accepts, and decode back exactly. */
class DeadLetterHeadersEncodingTest {

  @Test
  void printableAsciiIsKeptAndTheRestIsPercentEncoded() {
    assertThat(JetStreamDeadLetters.encode("plain text: 42 (ok)\t!"))
        .isEqualTo("plain text: 42 (ok)\t!");
    assertThat(JetStreamDeadLetters.encode("é\r\n100%")).isEqualTo("%C3%A9%0D%0A100%25");
  }

  @Test
  void everyEncodedValueIsAValidHeaderAndDecodesBack() {
    String nasty = "line 1\nline 2\r\n\u0000 \u00ff \u20ac 🚀 % + ~";
    String encoded = JetStreamDeadLetters.encode(nasty);
    assertThatCode(() -> new Headers().add("X", encoded)).doesNotThrowAnyException();
    // '+' is kept as is, which URLDecoder would read as a space: protect it for the check.
    assertThat(URLDecoder.decode(encoded.replace("+", "%2B"), StandardCharsets.UTF_8))
        .isEqualTo(nasty);
  }
}
