package dev.once.http;

import java.util.List;
import java.util.Objects;

/**
 * An HTTP response as stored for replays: status, the allow-listed headers in the order they were
 * captured, and the body — or, when the body was too large to store ({@code bodyStored} false),
 * an empty body: the original ran and is never run again, its replay says the body was not kept.
 * Every Once HTTP adapter (the servlet filter, the JAX-RS filter) stores this, encoded by
 * {@link StoredResponseCodec}, so a key answered through one replays through any other.
 *
 * @param status     the HTTP status, three digits
 * @param headers    the stored headers, in order
 * @param body       the body bytes (empty when not stored)
 * @param bodyStored whether the body was kept
 */
public record StoredResponse(int status, List<Header> headers, byte[] body, boolean bodyStored) {

  /**
   * One header line.
   *
   * @param name  the header name as captured
   * @param value its value
   */
  public record Header(String name, String value) {
    /** Refuses nulls. */
    public Header {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
    }
  }

  /** Checks the status and that a response without its body has none. */
  public StoredResponse {
    if (status < 100 || status > 999) {
      throw new IllegalArgumentException("status must be a three-digit code, was " + status);
    }
    headers = List.copyOf(headers);
    Objects.requireNonNull(body, "body");
    if (!bodyStored && body.length > 0) {
      throw new IllegalArgumentException("a response whose body was not stored has no body");
    }
  }

  /** A response stored whole. */
  public StoredResponse(int status, List<Header> headers, byte[] body) {
    this(status, headers, body, true);
  }

  /** The same status and headers, without the body: the form stored when the body is too large. */
  public StoredResponse withoutBody() {
    return new StoredResponse(status, headers, new byte[0], false);
  }
}
