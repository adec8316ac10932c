package dev.once.jackson;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Writes a JSON tree in canonical form. Package-private: the rules are documented on
 * {@link CanonicalJson}, which is the only way in.
 */
final class CanonicalWriter {

  /**
   * Beyond this many zeros a number is written in scientific notation, so that a short input
   * such as {@code 1e999999999} cannot make us write a gigabyte of zeros.
   */
  static final int MAX_PLAIN_SCALE = 1000;

  /** The parser's own bound, applied to trees built in code too, to avoid stack overflows. */
  static final int MAX_DEPTH = StreamReadConstraints.defaults().getMaxNestingDepth();

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** Orders object keys by Unicode code point, not by UTF-16 unit as String.compareTo does. */
  static final Comparator<String> CODE_POINT_ORDER = CanonicalWriter::compareCodePoints;

  private final StringBuilder out = new StringBuilder();

  private CanonicalWriter() {}

  /** The canonical UTF-8 bytes of {@code node}. */
  static byte[] write(JsonNode node) {
    CanonicalWriter writer = new CanonicalWriter();
    writer.value(node, 0);
    // Lone surrogates were escaped, so the string is well-formed and the encoding is lossless.
    return writer.out.toString().getBytes(StandardCharsets.UTF_8);
  }

  private void value(JsonNode node, int depth) {
    if (depth > MAX_DEPTH) {
      throw new IllegalArgumentException("JSON is nested deeper than " + MAX_DEPTH + " levels");
    }
    switch (node.getNodeType()) {
      case OBJECT -> object(node, depth);
      case ARRAY -> array(node, depth);
      case STRING -> string(node.textValue());
      case BINARY -> string(node.asText()); // Jackson writes binary as a base64 string
      case NUMBER -> out.append(number(node));
      case BOOLEAN -> out.append(node.booleanValue() ? "true" : "false");
      case NULL -> out.append("null");
      case MISSING -> throw new IllegalArgumentException("a missing node is not a JSON value");
      case POJO -> throw new IllegalArgumentException(
          "a POJO node is not a JSON value; convert it to a tree first");
      default -> throw new IllegalArgumentException("not a JSON value: " + node.getNodeType());
    }
  }

  private void object(JsonNode node, int depth) {
    List<Map.Entry<String, JsonNode>> fields = new ArrayList<>(node.properties());
    fields.sort(Map.Entry.comparingByKey(CODE_POINT_ORDER));
    out.append('{');
    for (int i = 0; i < fields.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      string(fields.get(i).getKey());
      out.append(':');
      value(fields.get(i).getValue(), depth + 1);
    }
    out.append('}');
  }

  private void array(JsonNode node, int depth) {
    out.append('[');
    for (int i = 0; i < node.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      value(node.get(i), depth + 1);
    }
    out.append(']');
  }

  /** Equal numbers get equal text: 1, 1.0, 1e0 and 10E-1 all become {@code 1}. */
  static String number(JsonNode node) {
    BigDecimal decimal;
    if (node.isFloat()) {
      // FloatNode.decimalValue() widens to double first (0.1f -> 0.10000000149...).
      decimal = finite(node.floatValue()) ? new BigDecimal(Float.toString(node.floatValue())) : null;
    } else if (node.isDouble()) {
      decimal = finite(node.doubleValue()) ? BigDecimal.valueOf(node.doubleValue()) : null;
    } else {
      decimal = node.decimalValue();
    }
    if (decimal == null) {
      throw new IllegalArgumentException("NaN and infinite numbers are not JSON: " + node);
    }
    return number(decimal);
  }

  static String number(BigDecimal value) {
    if (value.signum() == 0) {
      return "0"; // also -0 and 0.000
    }
    BigDecimal stripped = value.stripTrailingZeros();
    return Math.abs((long) stripped.scale()) <= MAX_PLAIN_SCALE
        ? stripped.toPlainString()
        : stripped.toString();
  }

  private static boolean finite(double d) {
    return !Double.isNaN(d) && !Double.isInfinite(d);
  }

  /** A JSON string: {@code "} and {@code \} escaped, control characters and lone surrogates too. */
  private void string(String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            unicodeEscape(c);
          } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
              && Character.isLowSurrogate(s.charAt(i + 1))) {
            out.append(c).append(s.charAt(++i));
          } else if (Character.isSurrogate(c)) {
            // A lone surrogate has no UTF-8 form; escaping keeps "\ud800" apart from "?".
            unicodeEscape(c);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private void unicodeEscape(char c) {
    out.append("\\u")
        .append(HEX[c >> 12 & 0xF])
        .append(HEX[c >> 8 & 0xF])
        .append(HEX[c >> 4 & 0xF])
        .append(HEX[c & 0xF]);
  }

  private static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }
}
