package dev.once.servlet.internal;

import java.util.List;
import java.util.Objects;

/**
 * An HTTP response as stored for replays: status, the allow-listed headers in the order they were
 * captured, and the body.
 */
public record StoredResponse(int status, List<Header> headers, byte[] body) {

  /** One header line. */
  public record Header(String name, String value) {
    public Header {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
    }
  }

  public StoredResponse {
    if (status < 100 || status > 999) {
      throw new IllegalArgumentException("status must be a three-digit code, was " + status);
    }
    headers = List.copyOf(headers);
    Objects.requireNonNull(body, "body");
  }
}
