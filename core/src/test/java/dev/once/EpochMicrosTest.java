package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.once.spi.EpochMicros;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class EpochMicrosTest {

  @Test
  void floorsNeverRoundsUpOnEitherSideOfTheEpoch() {
    assertThat(EpochMicros.of(Instant.ofEpochSecond(1, 999_999_999))).isEqualTo(1_999_999);
    assertThat(EpochMicros.of(Instant.ofEpochSecond(-1, 1))).isEqualTo(-1_000_000);
    assertThat(EpochMicros.toInstant(-1)).isEqualTo(Instant.ofEpochSecond(-1, 999_999_000));
    assertThat(EpochMicros.floor(Instant.ofEpochSecond(5, 1_999))).isEqualTo(
        Instant.ofEpochSecond(5, 1_000));
    assertThat(EpochMicros.floor(Duration.ofNanos(1))).isEqualTo(Duration.ofNanos(1_000));
    assertThat(EpochMicros.plus(Instant.EPOCH, Duration.ofMillis(3))).isEqualTo(3_000);
  }

  @Test
  void anInstantBeyondALongIsRefused() {
    assertThatIllegalArgumentException().isThrownBy(() -> EpochMicros.of(Instant.MAX));
    assertThatIllegalArgumentException().isThrownBy(
        () -> EpochMicros.plus(Instant.MAX, Duration.ofDays(1)));
  }
}
