package dev.once.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import org.junit.jupiter.api.Test;

class PathPatternsTest {

  static boolean matches(String pattern, String path) {
    return PathPatterns.of(List.of(pattern)).matches(path);
  }

  @Test
  void literalPatternsMatchOnlyThemselves() {
    assertThat(matches("/charges", "/charges")).isTrue();
    assertThat(matches("/charges", "/charges/")).isTrue();
    assertThat(matches("/charges", "/charges/1")).isFalse();
    assertThat(matches("/charges", "/refunds")).isFalse();
  }

  @Test
  void aStarMatchesWithinOneSegment() {
    assertThat(matches("/charges/*", "/charges/ch_1")).isTrue();
    assertThat(matches("/charges/*", "/charges/ch_1/refunds")).isFalse();
    assertThat(matches("/charges/*/refunds", "/charges/ch_1/refunds")).isTrue();
    assertThat(matches("/v*/charges", "/v2/charges")).isTrue();
    assertThat(matches("/v*/charges", "/x2/charges")).isFalse();
    assertThat(matches("/*.json", "/a.json")).isTrue();
  }

  @Test
  void aDoubleStarMatchesAnyNumberOfSegments() {
    assertThat(matches("/**", "/")).isTrue();
    assertThat(matches("/**", "/a/b/c")).isTrue();
    assertThat(matches("/payments/**", "/payments")).isTrue();
    assertThat(matches("/payments/**", "/payments/a/b")).isTrue();
    assertThat(matches("/payments/**", "/paymentsx")).isFalse();
    assertThat(matches("/a/**/z", "/a/z")).isTrue();
    assertThat(matches("/a/**/z", "/a/b/c/z")).isTrue();
    assertThat(matches("/a/**/z", "/a/b/c/y")).isFalse();
  }

  @Test
  void refusesPatternsItCannotMean() {
    assertThatIllegalArgumentException().isThrownBy(() -> PathPatterns.validate("charges"));
    assertThatIllegalArgumentException().isThrownBy(() -> PathPatterns.validate("/a**"));
  }
}
