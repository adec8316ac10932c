package dev.once.jackson;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class CanonicalJsonProperties {

  @Provide
  Arbitrary<Map<String, Object>> objects() {
    Arbitrary<Object> values = Arbitraries.oneOf(
        Arbitraries.integers().map(i -> (Object) i),
        Arbitraries.strings().ofMaxLength(12).map(s -> (Object) s));
    return Arbitraries.maps(Arbitraries.strings().ofMaxLength(8), values).ofMaxSize(12);
  }

  @Property
  void fingerprintIgnoresKeyOrder(@ForAll("objects") Map<String, Object> object,
      @ForAll long seed) {
    List<Map.Entry<String, Object>> entries = new ArrayList<>(object.entrySet());
    String oneWay = json(entries, false);
    Collections.shuffle(entries, new Random(seed));
    String otherWay = json(entries, true);

    assertThat(CanonicalJson.fingerprint(otherWay)).isEqualTo(CanonicalJson.fingerprint(oneWay));
  }

  @Property
  void canonicalizeIsIdempotent(@ForAll("objects") Map<String, Object> object) {
    byte[] once = CanonicalJson.canonicalize(json(new ArrayList<>(object.entrySet()), true));
    assertThat(CanonicalJson.canonicalize(once)).isEqualTo(once);
  }

  @Property
  void numbersCompareByValueHoweverWritten(@ForAll long unscaled, @ForAll("scales") int scale,
      @ForAll("shifts") int shift) {
    BigDecimal value = BigDecimal.valueOf(unscaled, scale);
    // The same value with `shift` more trailing zeros, in scientific notation.
    String digits = unscaled == 0 ? "0" : unscaled + "0".repeat(shift); // no leading zeros
    String padded = digits + "E" + (-scale - shift);

    assertThat(CanonicalJson.fingerprint("{\"n\":" + padded + "}"))
        .isEqualTo(CanonicalJson.fingerprint("{\"n\":" + value.toPlainString() + "}"));
    byte[] canonical = CanonicalJson.canonicalize(padded);
    assertThat(CanonicalJson.canonicalize(canonical)).isEqualTo(canonical);
  }

  @Provide
  Arbitrary<Integer> scales() {
    return Arbitraries.integers().between(-30, 30);
  }

  @Provide
  Arbitrary<Integer> shifts() {
    return Arbitraries.integers().between(0, 10);
  }

  /** JSON text built by hand: compact or spaced out, non-ASCII always escaped. */
  private static String json(List<Map.Entry<String, Object>> entries, boolean spaced) {
    String gap = spaced ? " \n\t" : "";
    StringBuilder sb = new StringBuilder("{").append(gap);
    for (int i = 0; i < entries.size(); i++) {
      if (i > 0) {
        sb.append(',').append(gap);
      }
      sb.append(quote(entries.get(i).getKey())).append(gap).append(':').append(gap);
      Object value = entries.get(i).getValue();
      sb.append(value instanceof String s ? quote(s) : value.toString());
    }
    return sb.append(gap).append('}').toString();
  }

  private static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20 || c > 0x7E) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
