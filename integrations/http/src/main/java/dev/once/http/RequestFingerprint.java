package dev.once.http;

import dev.once.Fingerprint;
import dev.once.jackson.CanonicalJson;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The fingerprint of an HTTP request: method, path, query string and body, each length-prefixed.
 * A JSON body ({@code application/json} or {@code application/*+json}) counts in its canonical
 * form, so key order and whitespace never matter; any other body, and JSON that does not parse,
 * counts as raw bytes.
 */
public final class RequestFingerprint {

  private static final String VERSION = "once.http.v1";

  private RequestFingerprint() {}

  /**
   * The fingerprint of a request: {@code method}, {@code path} (decoded, within the application),
   * the raw {@code query} (null for none), and {@code body} read under {@code contentType}.
   */
  public static Fingerprint of(String method, String path, String query, String contentType,
      byte[] body) {
    String kind = "raw";
    byte[] content = body;
    if (body.length > 0 && isJson(contentType)) {
      try {
        content = CanonicalJson.canonicalize(body);
        kind = "json";
      } catch (IllegalArgumentException notJson) {
        // Let the application answer the malformed body; fingerprint the bytes it was sent.
      }
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(content.length + 128);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      part(out, VERSION.getBytes(StandardCharsets.UTF_8));
      part(out, method.getBytes(StandardCharsets.UTF_8));
      part(out, path.getBytes(StandardCharsets.UTF_8));
      part(out, (query == null ? "" : "?" + query).getBytes(StandardCharsets.UTF_8));
      part(out, kind.getBytes(StandardCharsets.UTF_8));
      part(out, content);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot happen: writing to memory", e);
    }
    return Fingerprint.of(bytes.toByteArray());
  }

  static boolean isJson(String contentType) {
    if (contentType == null) {
      return false;
    }
    String type = contentType.toLowerCase(Locale.ROOT);
    int semicolon = type.indexOf(';');
    type = (semicolon < 0 ? type : type.substring(0, semicolon)).trim();
    return type.equals("application/json")
        || type.startsWith("application/") && type.endsWith("+json");
  }

  private static void part(DataOutputStream out, byte[] bytes) throws IOException {
    out.writeInt(bytes.length);
    out.write(bytes);
  }
}
