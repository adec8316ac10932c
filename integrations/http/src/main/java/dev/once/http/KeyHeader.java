package dev.once.http;

import dev.once.IdempotencyKey;
import java.util.List;

/**
 * Parses the {@code Idempotency-Key} header: an RFC 8941 sf-string ({@code "abc"}, as the IETF
 * draft specifies) or, as clients commonly send, a bare value ({@code abc}, a UUID). 1–255
 * printable ASCII characters; a bare key may not contain whitespace, {@code "}, {@code \\} or
 * {@code ,}; sf-string parameters and a header sent twice are refused. Every Once HTTP adapter
 * parses the key with it, so a key means the same whichever adapter received it.
 */
public final class KeyHeader {

  private KeyHeader() {}

  /**
   * The parsed header: a key ({@link #valid()}), none ({@link #missing()}), or why it is refused
   * ({@link #problem()}).
   */
  public record Parsed(String key, boolean missing, String problem) {
    static Parsed ok(String key) {
      return new Parsed(key, false, null);
    }

    static Parsed absent() {
      return new Parsed(null, true, null);
    }

    static Parsed invalid(String problem) {
      return new Parsed(null, false, problem);
    }

    /** Whether {@link #key()} holds a key. */
    public boolean valid() {
      return key != null;
    }
  }

  /** Parses every value the request carries under the header name (null or empty: none). */
  public static Parsed parse(List<String> values, String headerName) {
    if (values == null || values.isEmpty()) {
      return Parsed.absent();
    }
    if (values.size() > 1) {
      return Parsed.invalid(headerName + " was sent more than once");
    }
    return parse(values.get(0), headerName);
  }

  /** Parses one header value; {@code headerName} is used in the problem's text. */
  public static Parsed parse(String raw, String headerName) {
    String value = trimOws(raw);
    if (value.isEmpty()) {
      return Parsed.invalid(headerName + " is empty");
    }
    String key;
    if (value.charAt(0) == '"') {
      StringBuilder out = new StringBuilder(value.length());
      int i = 1;
      boolean closed = false;
      while (i < value.length()) {
        char c = value.charAt(i++);
        if (c == '\\') {
          if (i == value.length()) {
            return Parsed.invalid(headerName + " ends inside an escape");
          }
          char escaped = value.charAt(i++);
          if (escaped != '"' && escaped != '\\') {
            return Parsed.invalid(headerName + " escapes a character other than \\\" or \\\\");
          }
          out.append(escaped);
        } else if (c == '"') {
          closed = true;
          break;
        } else if (c < 0x20 || c > 0x7E) {
          return Parsed.invalid(nonPrintable(headerName, c));
        } else {
          out.append(c);
        }
      }
      if (!closed) {
        return Parsed.invalid(headerName + " opens a quoted string it does not close");
      }
      if (i != value.length()) {
        // sf-string parameters (";a=1") are not part of the draft's key; refuse rather than guess.
        return Parsed.invalid(headerName + " has text after the quoted key");
      }
      key = out.toString();
    } else {
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i);
        if (c <= 0x20 || c > 0x7E) {
          return Parsed.invalid(c == ' ' || c == '\t'
              ? headerName + " contains whitespace; quote it as an sf-string"
              : nonPrintable(headerName, c));
        }
        if (c == '"' || c == '\\' || c == ',') {
          return Parsed.invalid(headerName + " contains '" + c + "' outside a quoted string");
        }
      }
      key = value;
    }
    if (key.isEmpty() || key.isBlank()) {
      return Parsed.invalid(headerName + " is empty");
    }
    if (key.length() > IdempotencyKey.MAX_KEY_LENGTH) {
      return Parsed.invalid(headerName + " is " + key.length() + " characters long, more than "
          + IdempotencyKey.MAX_KEY_LENGTH);
    }
    return Parsed.ok(key);
  }

  private static String nonPrintable(String headerName, char c) {
    return headerName + " must be printable ASCII; found U+" + String.format("%04X", (int) c);
  }

  private static String trimOws(String value) {
    int start = 0;
    int end = value.length();
    while (start < end && (value.charAt(start) == ' ' || value.charAt(start) == '\t')) {
      start++;
    }
    while (end > start && (value.charAt(end - 1) == ' ' || value.charAt(end - 1) == '\t')) {
      end--;
    }
    return value.substring(start, end);
  }
}
