package dev.once.servlet;

import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Writes RFC 9457 {@code application/problem+json} answers. Beside {@link IdempotencyProblem}, so
 * the filter's internal package does not depend back on this one.
 */
final class Problems {

  /** The media type of every answer the filter writes itself. */
  static final String MEDIA_TYPE = "application/problem+json";

  private Problems() {}

  /** Answers {@code problem} with {@code detail}, unless the response is already committed. */
  static void send(HttpServletResponse response, IdempotencyProblem problem, String detail)
      throws IOException {
    send(response, problem, problem.status(), detail);
  }

  /** As {@link #send(HttpServletResponse, IdempotencyProblem, String)}, with another status. */
  static void send(HttpServletResponse response, IdempotencyProblem problem, int status,
      String detail) throws IOException {
    if (response.isCommitted()) {
      return;
    }
    response.resetBuffer();
    response.setStatus(status);
    response.setContentType(MEDIA_TYPE);
    byte[] body = json(problem, status, detail).getBytes(StandardCharsets.UTF_8);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  /** The JSON body. */
  static String json(IdempotencyProblem problem, String detail) {
    return json(problem, problem.status(), detail);
  }

  private static String json(IdempotencyProblem problem, int status, String detail) {
    return "{\"type\":" + quote(problem.type())
        + ",\"title\":" + quote(problem.title())
        + ",\"status\":" + status
        + ",\"detail\":" + quote(detail) + "}";
  }

  private static String quote(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
