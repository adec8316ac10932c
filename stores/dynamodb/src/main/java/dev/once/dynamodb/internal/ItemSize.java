package dev.once.dynamodb.internal;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** DynamoDB's item size rules (names plus values), for the scalar types records use. */
public final class ItemSize {

  private ItemSize() {}

  /** The size DynamoDB counts for {@code item}, in bytes. */
  public static int of(Map<String, AttributeValue> item) {
    int size = 0;
    for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
      size += utf8(e.getKey()) + of(e.getValue());
    }
    return size;
  }

  private static int of(AttributeValue v) {
    if (v.s() != null) {
      return utf8(v.s());
    }
    if (v.b() != null) {
      return v.b().asByteArrayUnsafe().length;
    }
    if (v.n() != null) {
      // About one byte per two significant digits, plus one.
      return (v.n().replace("-", "").replace(".", "").length() + 1) / 2 + 1;
    }
    return 1;
  }

  private static int utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }
}
