package dev.once.servlet;

import dev.once.http.IdempotencyProblem;
import dev.once.http.ProblemJson;
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
    byte[] body = ProblemJson.of(problem, status, detail, request.getRequestURI())
        .getBytes(StandardCharsets.UTF_8);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

}
