package dev.once.jackson;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.once.Fingerprint;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Fingerprints of JSON request bodies that ignore how the JSON is written: two bodies get the same
 * {@link Fingerprint} when they hold the same value, whatever their key order, whitespace or
 * number spelling. Clients and proxies reorder keys freely, so hashing the raw bytes would turn an
 * honest retry into a {@link dev.once.KeyReusedException}.
 *
 * <p>The canonical form: object keys sorted by Unicode code point, recursively; no whitespace;
 * arrays in their order; numbers by value ({@code 1}, {@code 1.0} and {@code 1e0} are all written
 * {@code 1}: trailing zeros stripped, plain notation unless that needs more than 1000 zeros);
 * strings as in RFC 8259, escaping only {@code "}, {@code \}, control characters and lone
 * surrogates; UTF-8. Input must be one well-formed JSON value: anything else, and objects with
 * duplicate keys (which parsers resolve differently), are rejected with an
 * {@link IllegalArgumentException} before anything is hashed.
 *
 * <p>To fingerprint only the fields that define a request (leaving out, say, a client timestamp),
 * select them with RFC 6901 JSON Pointers: {@code fingerprint(body, "/amount", "/customer/id")}.
 *
 * <p>Thread-safe; all methods are static.
 */
public final class CanonicalJson {

  /** Starts the hashed form of a pointer selection; no canonical JSON starts with a NUL byte. */
  private static final byte[] SELECTION_HEADER =
      "\0once.json-pointers.v1".getBytes(StandardCharsets.US_ASCII);

  private static final int MISSING = 0;
  private static final int PRESENT = 1;

  private static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .build())
      .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      // Decimals as BigDecimal, never through double, so no two distinct numbers collapse.
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .build();

  private CanonicalJson() {}

  /**
   * The fingerprint of a JSON document's canonical form.
   *
   * @throws IllegalArgumentException if {@code json} is not one well-formed JSON value
   */
  public static Fingerprint fingerprint(byte[] json) {
    return Fingerprint.of(canonicalize(json));
  }

  /** As {@link #fingerprint(byte[])}, for JSON text. */
  public static Fingerprint fingerprint(String json) {
    return Fingerprint.of(canonicalize(json));
  }

  /** As {@link #fingerprint(byte[])}, for a tree already parsed. */
  public static Fingerprint fingerprint(JsonNode node) {
    return Fingerprint.of(canonicalize(node));
  }

  /**
   * The fingerprint of only the values at {@code jsonPointers}, in the order given; every other
   * field may change without changing the fingerprint. Each pointer counts with its own text and
   * its value's canonical form; a pointer that selects nothing counts as missing, which differs
   * from an explicit {@code null}. The whole document must still be valid JSON.
   *
   * @param jsonPointers RFC 6901 pointers such as {@code "/amount"}, {@code "/items/0/sku"}, or
   *                     {@code ""} for the whole document; at least one
   * @throws IllegalArgumentException if {@code json} is not valid JSON, no pointer is given or a
   *                                  pointer is malformed
   */
  public static Fingerprint fingerprint(byte[] json, String... jsonPointers) {
    Objects.requireNonNull(jsonPointers, "jsonPointers");
    if (jsonPointers.length == 0) {
      // Selecting nothing would give every body the same fingerprint.
      throw new IllegalArgumentException("select at least one JSON pointer");
    }
    JsonPointer[] pointers = new JsonPointer[jsonPointers.length];
    for (int i = 0; i < jsonPointers.length; i++) {
      pointers[i] = pointer(jsonPointers[i], i);
    }
    JsonNode root = parse(json);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.write(SELECTION_HEADER);
      for (int i = 0; i < pointers.length; i++) {
        writeLengthPrefixed(out, jsonPointers[i].getBytes(StandardCharsets.UTF_8));
        JsonNode selected = root.at(pointers[i]);
        if (selected.isMissingNode()) {
          out.writeByte(MISSING);
        } else {
          out.writeByte(PRESENT);
          writeLengthPrefixed(out, CanonicalWriter.write(selected));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot happen: writing to memory", e);
    }
    return Fingerprint.of(bytes.toByteArray());
  }

  /**
   * The canonical UTF-8 bytes of a JSON document; equal documents give equal bytes, and
   * canonicalizing the result again changes nothing.
   *
   * @throws IllegalArgumentException if {@code json} is not one well-formed JSON value
   */
  public static byte[] canonicalize(byte[] json) {
    return CanonicalWriter.write(parse(json));
  }

  /** As {@link #canonicalize(byte[])}, for JSON text. */
  public static byte[] canonicalize(String json) {
    return CanonicalWriter.write(parse(json));
  }

  /**
   * As {@link #canonicalize(byte[])}, for a tree already parsed.
   *
   * @throws IllegalArgumentException if the tree holds something that is not JSON (a missing or
   *                                  POJO node, NaN or an infinite number)
   */
  public static byte[] canonicalize(JsonNode node) {
    return CanonicalWriter.write(Objects.requireNonNull(node, "node"));
  }

  private static JsonNode parse(byte[] json) {
    Objects.requireNonNull(json, "json");
    try {
      return present(MAPPER.readTree(json));
    } catch (IOException | IllegalArgumentException e) {
      throw invalid(e);
    }
  }

  private static JsonNode parse(String json) {
    Objects.requireNonNull(json, "json");
    try {
      return present(MAPPER.readTree(json));
    } catch (IOException | IllegalArgumentException e) {
      throw invalid(e);
    }
  }

  private static JsonNode present(JsonNode node) {
    if (node == null || node.isMissingNode()) {
      throw new IllegalArgumentException("not valid JSON: no value (empty input)");
    }
    return node;
  }

  private static IllegalArgumentException invalid(Exception e) {
    String detail = e.getMessage();
    if (e instanceof JsonProcessingException jpe) {
      detail = jpe.getOriginalMessage();
      JsonLocation at = jpe.getLocation();
      if (at != null && at.getLineNr() > 0) {
        detail += " at line " + at.getLineNr() + ", column " + at.getColumnNr();
      }
    }
    return new IllegalArgumentException("not valid JSON: " + detail, e);
  }

  /** Compiles an RFC 6901 pointer, stricter than Jackson about {@code ~} escapes. */
  private static JsonPointer pointer(String text, int index) {
    if (text == null) {
      throw new IllegalArgumentException("JSON pointer " + index + " is null");
    }
    if (!text.isEmpty() && text.charAt(0) != '/') {
      throw new IllegalArgumentException(
          "invalid JSON pointer \"" + text + "\": must be empty or start with '/' (RFC 6901)");
    }
    for (int i = 0; i < text.length(); i++) {
      if (text.charAt(i) == '~'
          && (i + 1 == text.length() || text.charAt(i + 1) != '0' && text.charAt(i + 1) != '1')) {
        throw new IllegalArgumentException("invalid JSON pointer \"" + text
            + "\": '~' must be followed by '0' or '1' (RFC 6901)");
      }
    }
    try {
      return JsonPointer.compile(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "invalid JSON pointer \"" + text + "\": " + e.getMessage(), e);
    }
  }

  private static void writeLengthPrefixed(DataOutputStream out, byte[] bytes) throws IOException {
    out.writeInt(bytes.length);
    out.write(bytes);
  }
}
