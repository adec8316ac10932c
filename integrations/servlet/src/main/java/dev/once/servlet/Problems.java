package dev.once.servlet;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Writes RFC 9457 {@code application/problem+json} answers, with the headers
 * {@link IdempotencyProblem} says each carries: the same answers as the Spring Boot starter's for
 * {@code @Idempotent} controllers.
 */
final class Problems {

  /** The media type of every answer the filter writes itself. */
  static final String MEDIA_TYPE = IdempotencyProblem.MEDIA_TYPE;

  private Problems() {}

  /**
   * Answers {@code problem} with {@code detail} to {@code request}, unless the response is
   * already committed. A problem that {@linkplain IdempotencyProblem#retryAfter() carries
   * Retry-After} gets 1 s.
   */
  static void send(HttpServletRequest request, HttpServletResponse response,
      IdempotencyProblem problem, String detail) throws IOException {
    send(request, response, problem, problem.status(), detail, 1);
  }

  /**
   * As {@link #send(HttpServletRequest, HttpServletResponse, IdempotencyProblem, String)}, with
   * another status and, for a problem that carries {@code Retry-After}, {@code retryAfterSeconds}.
   */
  static void send(HttpServletRequest request, HttpServletResponse response,
      IdempotencyProblem problem, int status, String detail, long retryAfterSeconds)
      throws IOException {
    if (response.isCommitted()) {
      return;
    }
    response.resetBuffer();
    response.setStatus(status);
    if (problem.replayed()) {
      response.setHeader(IdempotencyProblem.REPLAYED_HEADER, "true");
    }
    if (problem.retryAfter()) {
      response.setHeader(IdempotencyProblem.RETRY_AFTER_HEADER, Long.toString(retryAfterSeconds));
    }
    response.setContentType(MEDIA_TYPE);
    byte[] body = json(problem, status, detail, request.getRequestURI())
        .getBytes(StandardCharsets.UTF_8);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  /**
   * The JSON body: {@code type}, {@code title}, {@code status}, {@code detail} and
   * {@code instance}, the request's path (its URI without the query), as Spring answers a
   * {@code ProblemDetail}.
   */
  static String json(IdempotencyProblem problem, int status, String detail,
      String instance) {
    return "{\"type\":" + quote(problem.type())
        + ",\"title\":" + quote(problem.title())
        + ",\"status\":" + status
        + ",\"detail\":" + quote(detail)
        + ",\"instance\":" + quote(instance) + "}";
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
