package dev.once.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.once.Fingerprint;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CanonicalJsonTest {

  private static Fingerprint fp(String json) {
    return CanonicalJson.fingerprint(json);
  }

  private static Fingerprint fp(String json, String... pointers) {
    return CanonicalJson.fingerprint(json.getBytes(StandardCharsets.UTF_8), pointers);
  }

  private static String canonical(String json) {
    return new String(CanonicalJson.canonicalize(json), StandardCharsets.UTF_8);
  }

  @Test
  void keyOrderDoesNotMatter() {
    assertThat(fp("{\"a\":1,\"b\":2}")).isEqualTo(fp("{\"b\":2,\"a\":1}"));
  }

  @Test
  void nestedKeyOrderDoesNotMatter() {
    assertThat(fp("{\"x\":{\"a\":1,\"b\":{\"c\":true,\"d\":null}},\"y\":[{\"p\":1,\"q\":2}]}"))
        .isEqualTo(fp("{\"y\":[{\"q\":2,\"p\":1}],\"x\":{\"b\":{\"d\":null,\"c\":true},\"a\":1}}"));
  }

  @Test
  void whitespaceDoesNotMatter() {
    assertThat(fp(" {\n  \"a\" : [ 1 , 2 ],\t\"b\":\r\n\"x y\" }\n"))
        .isEqualTo(fp("{\"a\":[1,2],\"b\":\"x y\"}"));
  }

  @Test
  void numbersCompareByValue() {
    assertThat(fp("{\"n\":1}"))
        .isEqualTo(fp("{\"n\":1.0}"))
        .isEqualTo(fp("{\"n\":1e0}"))
        .isEqualTo(fp("{\"n\":10E-1}"))
        .isEqualTo(fp("{\"n\":1.000}"));
    assertThat(fp("100")).isEqualTo(fp("1e2")).isEqualTo(fp("1.00E+2"));
    assertThat(fp("0")).isEqualTo(fp("-0")).isEqualTo(fp("0.000")).isEqualTo(fp("0e10"));
    assertThat(fp("1")).isNotEqualTo(fp("1.0000000000000000000000001"));
    assertThat(fp("0.1")).isNotEqualTo(fp("0.10000000000000001"));
  }

  @Test
  void canonicalFormIsCompactSortedAndPlain() {
    assertThat(canonical("{ \"b\" : [3, 1.50, 2e3], \"a\" : {\"z\":null, \"y\": false} }"))
        .isEqualTo("{\"a\":{\"y\":false,\"z\":null},\"b\":[3,1.5,2000]}");
    assertThat(canonical("[-1.250e-3, 123456789012345678901234567890, 1E+2]"))
        .isEqualTo("[-0.00125,123456789012345678901234567890,100]");
  }

  @Test
  void hugeExponentsStayShort() {
    assertThat(canonical("1e999999999")).isEqualTo("1E+999999999");
    assertThat(canonical("10e999999998")).isEqualTo("1E+999999999");
    assertThat(canonical("-2.50e-5000")).isEqualTo("-2.5E-5000");
    assertThat(canonical("1E+1000")).hasSize(1001);
  }

  @Test
  void keysSortByCodePoint() {
    // U+FF61 sorts before U+1F600 by code point, but after it by UTF-16 unit.
    assertThat(canonical("{\"\uD83D\uDE00\":1,\"\uFF61\":2,\"B\":3,\"a\":4,\"\":5}"))
        .isEqualTo("{\"\":5,\"B\":3,\"a\":4,\"\uFF61\":2,\"\uD83D\uDE00\":1}");
  }

  @Test
  void stringsAreEscapedAsJson() {
    assertThat(canonical("\"\\u0041\\/\\\"\\\\\\n\\t\\u0001\\u00e9\\u20ac\\ud83d\\ude00\""))
        .isEqualTo("\"A/\\\"\\\\\\n\\t\\u0001é€\uD83D\uDE00\"");
    // Output is UTF-8, non-ASCII written as is.
    assertThat(CanonicalJson.canonicalize("\"é\"")).containsExactly('"', 0xC3, 0xA9, '"');
  }

  @Test
  void loneSurrogatesStayDistinct() {
    assertThat(canonical("\"\\ud800\"")).isEqualTo("\"\\ud800\"");
    assertThat(fp("\"\\ud800\"")).isNotEqualTo(fp("\"?\"")).isNotEqualTo(fp("\"\\udc00\""));
  }

  @Test
  void arrayOrderMatters() {
    assertThat(fp("[1,2,3]")).isNotEqualTo(fp("[3,2,1]"));
    assertThat(fp("{\"a\":[1,2]}")).isNotEqualTo(fp("{\"a\":[2,1]}"));
  }

  @Test
  void differentValuesDiffer() {
    assertThat(fp("{\"a\":1}")).isNotEqualTo(fp("{\"a\":2}"));
    assertThat(fp("{\"a\":1}")).isNotEqualTo(fp("{\"a\":\"1\"}"));
    assertThat(fp("{\"a\":1}")).isNotEqualTo(fp("{\"b\":1}"));
    assertThat(fp("{\"a\":null}")).isNotEqualTo(fp("{}"));
    assertThat(fp("{\"a\":true}")).isNotEqualTo(fp("{\"a\":\"true\"}"));
    assertThat(fp("[]")).isNotEqualTo(fp("{}"));
  }

  @Test
  void bytesStringAndTreeAgree() throws Exception {
    String json = "{\"b\":[1,{\"d\":2.50,\"c\":\"x\"}],\"a\":null}";
    JsonNode tree = new ObjectMapper().readTree(json);
    assertThat(CanonicalJson.fingerprint(json.getBytes(StandardCharsets.UTF_8)))
        .isEqualTo(fp(json))
        .isEqualTo(CanonicalJson.fingerprint(tree));
  }

  @Test
  void treesBuiltInCodeUseTheSameNumberRules() {
    JsonNodeFactory nodes = JsonNodeFactory.instance;
    ObjectNode built = nodes.objectNode();
    built.put("f", 0.1f).put("d", 0.1d).put("i", 5).put("l", 5L);
    assertThat(new String(CanonicalJson.canonicalize(built), StandardCharsets.UTF_8))
        .isEqualTo("{\"d\":0.1,\"f\":0.1,\"i\":5,\"l\":5}");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.canonicalize(nodes.numberNode(Double.NaN)))
        .withMessageContaining("NaN");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.canonicalize(nodes.missingNode()));
  }

  @Test
  void pointerSelectionIgnoresOtherFields() {
    String first = "{\"amount\":100,\"customer\":{\"id\":\"c1\",\"name\":\"Ann\"},\"sentAt\":\"t1\"}";
    String retry = "{\"sentAt\":\"t2\",\"customer\":{\"name\":\"Anne\",\"id\":\"c1\"},\"amount\":1e2}";
    assertThat(fp(first, "/amount", "/customer/id")).isEqualTo(fp(retry, "/amount", "/customer/id"));
    assertThat(fp(first)).isNotEqualTo(fp(retry));
  }

  @Test
  void pointerSelectionDiffersWhenASelectedFieldDiffers() {
    String a = "{\"amount\":100,\"customer\":{\"id\":\"c1\"}}";
    String b = "{\"amount\":100,\"customer\":{\"id\":\"c2\"}}";
    assertThat(fp(a, "/amount", "/customer/id")).isNotEqualTo(fp(b, "/amount", "/customer/id"));
    assertThat(fp(a, "/amount")).isEqualTo(fp(b, "/amount"));
  }

  @Test
  void pointerSelectionCountsThePointerToo() {
    String json = "{\"a\":1,\"b\":1}";
    assertThat(fp(json, "/a")).isNotEqualTo(fp(json, "/b"));
    assertThat(fp(json, "/a", "/b")).isNotEqualTo(fp(json, "/a"));
    // Never the same as the plain fingerprint of the selected value.
    assertThat(fp("1", "")).isNotEqualTo(fp("1"));
  }

  @Test
  void pointerSelectionReachesIntoArraysAndEscapedKeys() {
    String json = "{\"items\":[{\"sku\":\"A\"},{\"sku\":\"B\"}],\"a/b\":1,\"m~n\":2}";
    assertThat(fp(json, "/items/1/sku")).isEqualTo(fp("{\"items\":[0,{\"sku\":\"B\"}]}", "/items/1/sku"));
    assertThat(fp(json, "/a~1b", "/m~0n"))
        .isEqualTo(fp("{\"m~n\":2,\"a/b\":1.0}", "/a~1b", "/m~0n"));
  }

  @Test
  void missingDiffersFromNull() {
    assertThat(fp("{\"a\":1}", "/b")).isNotEqualTo(fp("{\"a\":1,\"b\":null}", "/b"));
    assertThat(fp("{\"a\":1}", "/b")).isEqualTo(fp("{\"c\":2}", "/b"));
    assertThat(fp("{\"b\":\"\"}", "/b")).isNotEqualTo(fp("{}", "/b"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "   ", "{", "{\"a\":}", "{\"a\":1,}", "[1 2]", "{a:1}", "'x'",
      "{\"a\":1} {}", "{} x", "NaN", "01", "1e-2147483649", "\"unterminated"})
  void invalidJsonIsRejected(String json) {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.fingerprint(json))
        .withMessageStartingWith("not valid JSON");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.fingerprint(json.getBytes(StandardCharsets.UTF_8)))
        .withMessageStartingWith("not valid JSON");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.fingerprint(json.getBytes(StandardCharsets.UTF_8), "/a"))
        .withMessageStartingWith("not valid JSON");
  }

  @Test
  void invalidJsonMessageSaysWhere() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.canonicalize("{\"a\":1,\n\"b\":}"))
        .withMessageContaining("line 2");
  }

  @Test
  void duplicateKeysAreRejected() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.fingerprint("{\"a\":1,\"a\":2}"))
        .withMessageContaining("Duplicate")
        .withMessageContaining("'a'");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.fingerprint("{\"x\":{\"a\":1,\"b\":0,\"a\":1}}"
            .getBytes(StandardCharsets.UTF_8)));
    assertThatIllegalArgumentException()
        .isThrownBy(() -> CanonicalJson.fingerprint("{\"a\":1,\"a\":2}"
            .getBytes(StandardCharsets.UTF_8), "/b"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"amount", "#/amount", "/a~", "/a~2b", "~1"})
  void badPointersAreRejected(String pointer) {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> fp("{\"amount\":1}", pointer))
        .withMessageContaining("invalid JSON pointer")
        .withMessageContaining(pointer);
  }

  @Test
  void aSelectionNeedsPointers() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> fp("{\"a\":1}", new String[0]))
        .withMessageContaining("at least one");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> fp("{\"a\":1}", "/a", null))
        .withMessageContaining("pointer 1 is null");
  }

  @Test
  void tooDeepNestingIsRejected() {
    String deep = "[".repeat(5000) + "]".repeat(5000);
    assertThatIllegalArgumentException().isThrownBy(() -> CanonicalJson.canonicalize(deep));
  }
}
