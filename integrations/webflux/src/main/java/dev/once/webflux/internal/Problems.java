package dev.once.webflux.internal;

import dev.once.http.IdempotencyProblem;
import dev.once.http.ProblemJson;
import java.nio.charset.StandardCharsets;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Writes RFC 9457 {@code application/problem+json} answers ({@link ProblemJson}), with the headers
 * {@link IdempotencyProblem} says each carries: the same answers as the servlet filter's.
 */
public final class Problems {

  private Problems() {}

  /** Answers {@code problem} with its status; one carrying Retry-After gets 1 s. */
  public static Mono<Void> send(ServerWebExchange exchange, IdempotencyProblem problem,
      String detail) {
    return send(exchange, problem, problem.status(), detail, 1);
  }

  /**
   * Answers {@code problem} with {@code status} and, for a problem that carries
   * {@code Retry-After}, {@code retryAfterSeconds}, unless the response is already committed. The
   * {@code instance} is the request's path.
   */
  public static Mono<Void> send(ServerWebExchange exchange, IdempotencyProblem problem,
      int status, String detail, long retryAfterSeconds) {
    ServerHttpResponse response = exchange.getResponse();
    if (response.isCommitted()) {
      return Mono.empty();
    }
    response.setStatusCode(HttpStatusCode.valueOf(status));
    HttpHeaders headers = response.getHeaders();
    if (problem.replayed()) {
      headers.set(IdempotencyProblem.REPLAYED_HEADER, "true");
    }
    if (problem.retryAfter()) {
      headers.set(IdempotencyProblem.RETRY_AFTER_HEADER, Long.toString(retryAfterSeconds));
    }
    headers.set(HttpHeaders.CONTENT_TYPE, IdempotencyProblem.MEDIA_TYPE);
    byte[] body = ProblemJson.of(problem, status, detail,
        exchange.getRequest().getPath().value()).getBytes(StandardCharsets.UTF_8);
    headers.setContentLength(body.length);
    return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
  }
}
