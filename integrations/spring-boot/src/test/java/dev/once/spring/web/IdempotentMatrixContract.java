package dev.once.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.http.IdempotencyProblem;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Issue 24: {@code @Idempotent} on a controller method is right for every return type, over real
 * HTTP (Tomcat on a random port, {@code java.net.http} as the client), on each store a subclass
 * names. For each {@link Route}: the first call and its retry (a returned value: byte-identical
 * body, same status and allow-listed headers, the {@code Idempotent-Replayed} marker, one run; an
 * exception: as the failure policy says, see {@link Retry}), the same key with another body
 * (422), a duplicate while the first runs (409 with {@code Retry-After}), no key (400) and the
 * store down (503 with {@code Retry-After}). Then the one HTTP vocabulary: each {@link Case} sent
 * to a route under the Idempotency-Key filter and to an {@code @Idempotent} route answers alike,
 * as {@link IdempotencyProblem} defines.
 */
abstract class IdempotentMatrixContract {

  /** The response headers a replay carries again (the filter's default allow-list). */
  static final List<String> REPLAYED_HEADERS = List.of("Content-Type", "Content-Language",
      "Content-Location", "Location", "ETag", "Last-Modified", "Link");

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  /** What the retry of a first call gets. */
  enum Retry {
    /** The stored value, replayed as it was answered, marked. */
    REPLAYED,
    /**
     * An exception the failure policy calls retryable (the default): nothing is stored, the key
     * is released, the method runs again and Spring MVC answers its exception again (unmarked:
     * nothing was replayed). The answer's status does not make a failure final; the policy does.
     */
    RUNS_AGAIN,
    /**
     * An exception the policy calls terminal ({@code terminalOn}): stored as a failure (its
     * durable steps compensated), replayed as 500 {@code idempotency-original-failed}, marked,
     * as the filter answers a replayed terminal failure. (Map {@code ReplayedFailureException}
     * to answer it otherwise, as the payments example does.)
     */
    ORIGINAL_FAILED
  }

  /** Each return type, with the status its first call answers and what its retry gets. */
  enum Route {
    RESPONSE_ENTITY("/matrix/entity", "entity", 201, Retry.REPLAYED),
    VOID("/matrix/void", "void", 202, Retry.REPLAYED),
    OPTIONAL("/matrix/optional", "optional", 200, Retry.REPLAYED),
    RECORD("/matrix/record", "record", 200, Retry.REPLAYED),
    COLLECTION("/matrix/collection", "collection", 200, Retry.REPLAYED),
    PRIMITIVE("/matrix/primitive", "primitive", 200, Retry.REPLAYED),
    HTTP_ENTITY("/matrix/http-entity", "http-entity", 200, Retry.REPLAYED),
    PROBLEM_DETAIL("/matrix/problem", "problem", 402, Retry.REPLAYED),
    /** An exception mapped by an {@code @ExceptionHandler} to a 402 problem. */
    EXCEPTION_HANDLER("/matrix/handled-exception", "handled-exception", 402, Retry.RUNS_AGAIN),
    EXCEPTION_HANDLER_TERMINAL("/matrix/handled-terminal", "handled-terminal", 402,
        Retry.ORIGINAL_FAILED),
    /** An exception mapped by {@code @ResponseStatus}: Spring answers it with sendError. */
    RESPONSE_STATUS("/matrix/status-exception", "status-exception", 410, Retry.RUNS_AGAIN),
    RESPONSE_STATUS_TERMINAL("/matrix/status-terminal", "status-terminal", 410,
        Retry.ORIGINAL_FAILED);

    final String path;
    final String name;
    final int status;
    final Retry retry;

    Route(String path, String name, int status, Retry retry) {
      this.path = path;
      this.name = name;
      this.status = status;
      this.retry = retry;
    }
  }

  @LocalServerPort
  int port;

  @Autowired
  MatrixApplication.Matrix matrix;

  @Autowired
  MatrixApplication.Gate gate;

  @Autowired
  MatrixApplication.Outage outage;

  // ------------------------------------------------------------------------------------------
  // the return-type matrix

  @ParameterizedTest
  @EnumSource(Route.class)
  void theFirstCallRunsAndItsRetryIsReplayedAsItWas(Route route) throws Exception {
    String key = key();
    int before = matrix.runs(route.name);
    HttpResponse<byte[]> first = post(route.path, key, 500);
    HttpResponse<byte[]> retry = post(route.path, key, 500);

    assertThat(first.statusCode()).as(text(first)).isEqualTo(route.status);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    if (route.retry == Retry.RUNS_AGAIN) {
      assertThat(retry.statusCode()).isEqualTo(first.statusCode());
      assertThat(matrix.runs(route.name)).as("not stored: run again").isEqualTo(before + 2);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
      return;
    }
    if (route.retry == Retry.ORIGINAL_FAILED) {
      assertProblem(retry, IdempotencyProblem.ORIGINAL_FAILED, route.path);
      assertThat(matrix.runs(route.name)).as("stored: not run again").isEqualTo(before + 1);
      return;
    }
    assertThat(retry.statusCode()).isEqualTo(first.statusCode());
    assertThat(retry.body()).as(text(retry)).isEqualTo(first.body());
    for (String header : REPLAYED_HEADERS) {
      assertThat(retry.headers().allValues(header)).as(header)
          .isEqualTo(first.headers().allValues(header));
    }
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    if (route == Route.RESPONSE_ENTITY) {
      assertThat(first.headers().firstValue("Set-Cookie")).as("the first answer's").isPresent();
    }
    assertThat(retry.headers().firstValue("Set-Cookie")).as("never replayed").isEmpty();
    assertThat(matrix.runs(route.name)).isEqualTo(before + 1);
  }

  @ParameterizedTest
  @EnumSource(Route.class)
  void theSameKeyWithAnotherBodyIs422(Route route) throws Exception {
    String key = key();
    post(route.path, key, 500);
    int before = matrix.runs(route.name);
    HttpResponse<byte[]> reuse = post(route.path, key, 900);

    assertProblem(reuse, IdempotencyProblem.KEY_REUSED, route.path);
    assertThat(matrix.runs(route.name)).isEqualTo(before);
  }

  @ParameterizedTest
  @EnumSource(Route.class)
  void aDuplicateWhileTheFirstRunsIs409WithRetryAfter(Route route) throws Exception {
    String key = key();
    MatrixApplication.Gate.Hold hold = gate.hold(key);
    CompletableFuture<HttpResponse<byte[]>> first = postAsync(route.path, key, 500);
    try {
      assertThat(hold.entered().await(30, TimeUnit.SECONDS)).isTrue();
      HttpResponse<byte[]> duplicate = post(route.path, key, 500);

      assertProblem(duplicate, IdempotencyProblem.IN_PROGRESS, route.path);
      assertThat(duplicate.headers().firstValue("Retry-After")).contains("1");
    } finally {
      hold.release().countDown();
    }
    assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(route.status);
  }

  @ParameterizedTest
  @EnumSource(Route.class)
  void noKeyIs400AndNothingRuns(Route route) throws Exception {
    int before = matrix.runs(route.name);
    HttpResponse<byte[]> missing = post(route.path, null, 500);

    assertProblem(missing, IdempotencyProblem.KEY_MISSING, route.path);
    assertThat(matrix.runs(route.name)).isEqualTo(before);
  }

  /** A controller that requires the header ({@code @RequestHeader}'s default) answers alike. */
  @Test
  void aRequiredKeyHeaderThatIsMissingIsAlso400KeyMissing() throws Exception {
    HttpResponse<byte[]> missing = post("/matrix/required-header", null, 500);

    assertProblem(missing, IdempotencyProblem.KEY_MISSING, "/matrix/required-header");
    assertThat(matrix.runs("required-header")).isZero();
    String key = key();
    assertThat(post("/matrix/required-header", key, 500).statusCode()).isEqualTo(200);
    assertThat(post("/matrix/required-header", key, 500).headers()
        .firstValue("Idempotent-Replayed")).contains("true");
  }

  @ParameterizedTest
  @EnumSource(Route.class)
  void theStoreDownIs503WithRetryAfterAndNothingRuns(Route route) throws Exception {
    int before = matrix.runs(route.name);
    HttpResponse<byte[]> down;
    outage.down(true);
    try {
      down = post(route.path, key(), 500);
    } finally {
      outage.down(false);
    }

    assertProblem(down, IdempotencyProblem.STORE_UNAVAILABLE, route.path);
    assertThat(down.headers().firstValue("Retry-After")).contains("1");
    assertThat(matrix.runs(route.name)).isEqualTo(before);
    // Back up: the same route works again.
    assertThat(post(route.path, key(), 500).statusCode()).isEqualTo(route.status);
  }

  // ------------------------------------------------------------------------------------------
  // one vocabulary: the filter and @Idempotent answer each case alike

  /** The situations both answer themselves, and the problem each is (null: a replay). */
  enum Case {
    REPLAY(null),
    KEY_MISSING(IdempotencyProblem.KEY_MISSING),
    KEY_INVALID(IdempotencyProblem.KEY_INVALID),
    KEY_REUSED(IdempotencyProblem.KEY_REUSED),
    IN_PROGRESS(IdempotencyProblem.IN_PROGRESS),
    STORE_UNAVAILABLE(IdempotencyProblem.STORE_UNAVAILABLE);

    final IdempotencyProblem problem;

    Case(IdempotencyProblem problem) {
      this.problem = problem;
    }
  }

  /** What a client can tell apart in an answer; the detail and the instance's path aside. */
  record Answer(int status, String contentType, String type, String title, Integer bodyStatus,
      boolean instance, boolean detail, Optional<String> retryAfter, Optional<String> replayed) {}

  @ParameterizedTest
  @EnumSource(Case.class)
  void theFilterAndIdempotentAnswerEachCaseAlike(Case c) throws Exception {
    Answer filter = answer(send(c, "/filtered/record"), "/filtered/record");
    Answer idempotent = answer(send(c, "/matrix/record"), "/matrix/record");

    assertThat(idempotent).isEqualTo(filter);
    if (c.problem == null) {
      assertThat(filter.status()).isEqualTo(200);
      assertThat(filter.replayed()).contains("true");
      return;
    }
    assertThat(filter).isEqualTo(new Answer(c.problem.status(),
        IdempotencyProblem.MEDIA_TYPE, c.problem.type(), c.problem.title(), c.problem.status(),
        true, true,
        c.problem.retryAfter() ? Optional.of("1") : Optional.empty(),
        c.problem.replayed() ? Optional.of("true") : Optional.empty()));
  }

  private HttpResponse<byte[]> send(Case c, String path) throws Exception {
    String key = key();
    switch (c) {
      case REPLAY -> {
        post(path, key, 500);
        return post(path, key, 500);
      }
      case KEY_MISSING -> {
        return post(path, null, 500);
      }
      case KEY_INVALID -> {
        return post(path, "k".repeat(300), 500);
      }
      case KEY_REUSED -> {
        post(path, key, 500);
        return post(path, key, 900);
      }
      case IN_PROGRESS -> {
        MatrixApplication.Gate.Hold hold = gate.hold(key);
        CompletableFuture<HttpResponse<byte[]>> first = postAsync(path, key, 500);
        try {
          assertThat(hold.entered().await(30, TimeUnit.SECONDS)).isTrue();
          return post(path, key, 500);
        } finally {
          hold.release().countDown();
          first.get(30, TimeUnit.SECONDS);
        }
      }
      case STORE_UNAVAILABLE -> {
        outage.down(true);
        try {
          return post(path, key, 500);
        } finally {
          outage.down(false);
        }
      }
      default -> throw new IllegalArgumentException(c.name());
    }
  }

  private static Answer answer(HttpResponse<byte[]> response, String path) throws IOException {
    String contentType = response.headers().firstValue("Content-Type").orElse(null);
    JsonNode body = JSON.readTree(response.body());
    boolean problem = contentType != null && contentType.startsWith("application/problem+json");
    if (problem) {
      assertThat(body.path("instance").asText()).isEqualTo(path);
    }
    return new Answer(response.statusCode(), problem ? "application/problem+json" : contentType,
        problem ? body.path("type").asText() : null,
        problem ? body.path("title").asText() : null,
        problem ? body.path("status").asInt() : null,
        body.has("instance"), problem && body.hasNonNull("detail"),
        response.headers().firstValue("Retry-After"),
        response.headers().firstValue("Idempotent-Replayed"));
  }

  /** {@code response} is {@code problem}: status, media type, type, title, instance, detail. */
  static void assertProblem(HttpResponse<byte[]> response, IdempotencyProblem problem,
      String path) throws IOException {
    assertThat(response.statusCode()).as(text(response)).isEqualTo(problem.status());
    assertThat(response.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("application/problem+json"));
    JsonNode body = JSON.readTree(response.body());
    assertThat(body.path("type").asText()).isEqualTo(problem.type());
    assertThat(body.path("title").asText()).isEqualTo(problem.title());
    assertThat(body.path("status").asInt()).isEqualTo(problem.status());
    assertThat(body.path("instance").asText()).isEqualTo(path);
    assertThat(body.path("detail").asText()).isNotBlank();
    assertThat(response.headers().firstValue("Retry-After").isPresent()).as("Retry-After")
        .isEqualTo(problem.retryAfter());
    assertThat(response.headers().firstValue("Idempotent-Replayed").isPresent())
        .as("Idempotent-Replayed").isEqualTo(problem.replayed());
  }

  static String key() {
    return "m-" + UUID.randomUUID();
  }

  HttpResponse<byte[]> post(String path, String key, long amount) throws Exception {
    return HTTP.send(request(path, key, amount), HttpResponse.BodyHandlers.ofByteArray());
  }

  CompletableFuture<HttpResponse<byte[]>> postAsync(String path, String key, long amount) {
    return HTTP.sendAsync(request(path, key, amount), HttpResponse.BodyHandlers.ofByteArray());
  }

  private HttpRequest request(String path, String key, long amount) {
    HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":" + amount + "}"));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return request.build();
  }

  static String text(HttpResponse<byte[]> response) {
    return response.statusCode() + " " + response.headers().map() + " "
        + new String(response.body(), StandardCharsets.UTF_8);
  }
}
