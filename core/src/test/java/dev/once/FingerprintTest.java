package dev.once;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FingerprintTest {

  @Test
  void isTheSha256OfTheContent() {
    // SHA-256("abc") from FIPS 180-2.
    assertThat(Fingerprint.of("abc").hex())
        .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assertThat(Fingerprint.of("abc".getBytes(StandardCharsets.UTF_8))).isEqualTo(Fingerprint.of("abc"));
  }

  @Test
  void partsAreLengthPrefixedSoConcatenationCannotCollide() {
    assertThat(Fingerprint.ofParts("ab", "c")).isNotEqualTo(Fingerprint.ofParts("a", "bc"));
    assertThat(Fingerprint.ofParts("POST", "/charges", "{}"))
        .isEqualTo(Fingerprint.ofParts("POST", "/charges", "{}"));
    assertThat(Fingerprint.ofParts("", "")).isNotEqualTo(Fingerprint.ofParts(""));
  }

  @Test
  void nullIsRejectedNeverHashedAsText() {
    assertThatThrownBy(() -> Fingerprint.ofParts("a", null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("part 1");
    assertThatThrownBy(() -> Fingerprint.of((String) null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void roundTripsThroughHexAndDigest() {
    Fingerprint fp = Fingerprint.of("payload");
    assertThat(Fingerprint.fromHex(fp.hex())).isEqualTo(fp);
    assertThat(Fingerprint.fromDigest(fp.digest())).isEqualTo(fp).hasSameHashCodeAs(fp);
    assertThatThrownBy(() -> Fingerprint.fromDigest(new byte[31]))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32 bytes");
  }

  @Test
  void digestIsDefensivelyCopied() {
    Fingerprint fp = Fingerprint.of("x");
    byte[] digest = fp.digest();
    digest[0] ^= 1;
    assertThat(fp.digest()).isNotEqualTo(digest);
  }
}
