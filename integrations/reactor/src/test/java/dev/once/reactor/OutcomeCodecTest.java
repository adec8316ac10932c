package dev.once.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codec;
import dev.once.Codecs;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link OnceReactor#outcomeCodec}: an empty result and every value, told apart. */
class OutcomeCodecTest {

  private final Codec<Optional<String>> codec = OnceReactor.outcomeCodec(Codecs.utf8());

  @Test
  void emptyAndAValueOfNoBytesAreDifferentOutcomes() {
    byte[] empty = codec.encode(Optional.empty());
    byte[] noBytes = codec.encode(Optional.of(""));

    assertThat(empty).isNotEqualTo(noBytes);
    assertThat(codec.decode(empty)).isEmpty();
    assertThat(codec.decode(noBytes)).contains("");
  }

  @Test
  void aValueThatLooksLikeTheEmptyTagIsStillAValue() {
    assertThat(codec.decode(codec.encode(Optional.of("e")))).contains("e");
    assertThat(codec.decode(codec.encode(Optional.of("v")))).contains("v");
  }

  @Test
  void bytesWithoutATagAreRefused() {
    assertThatThrownBy(() -> codec.decode("charged".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("OnceReactor.outcomeCodec");
    assertThatThrownBy(() -> codec.decode(new byte[0]))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theMediaTypeNamesTheWrappedCodecs() {
    assertThat(codec.mediaType()).isEqualTo("application/vnd.once.mono; codec=\""
        + Codecs.utf8().mediaType() + "\"");
  }
}
