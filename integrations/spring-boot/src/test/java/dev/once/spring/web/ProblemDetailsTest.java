package dev.once.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.http.IdempotencyProblem;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * {@code @Idempotent} failures over real HTTP (Tomcat on a random port, SQLite): each of Once's
 * answers is {@code application/problem+json} with the filter's problem types, ahead of the
 * application's own catch-all advice. The filter protects {@code /filtered/**} only.
 */
@SpringBootTest(classes = ProblemDetailsApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "server.address=127.0.0.1",
        "once.jdbc.create-schema=true",
        "once.http.paths=/filtered/**",
        "once.max-payload=1KB",
        "once.lease=5s",
        "once.http.retry-after=10s"})
class ProblemDetailsTest {

  @LocalServerPort
  int port;

  @Autowired
  ProblemDetailsApplication.Payments payments;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void aKeyReusedWithOtherArgumentsIs422ProblemJson() throws Exception {
    HttpResponse<String> first = post("/charges/k-reuse?amount=500");
    HttpResponse<String> retry = post("/charges/k-reuse?amount=500");
    HttpResponse<String> reuse = post("/charges/k-reuse?amount=900");

    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(reuse.statusCode()).isEqualTo(422);
    assertThat(reuse.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(reuse.body())
        .contains("\"type\":\"" + IdempotencyProblem.KEY_REUSED.type() + "\"")
        .contains("\"title\":\"" + IdempotencyProblem.KEY_REUSED.title() + "\"")
        .contains("\"status\":422")
        .contains("already used for a request with other arguments")
        .doesNotContain("catch-all");
  }

  @Test
  void aDuplicateOfARunningCallIs409WithRetryAfter() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    payments.holdNextSlowCall(entered, release);
    CompletableFuture<HttpResponse<String>> original = CompletableFuture.supplyAsync(() -> {
      try {
        return post("/slow/k-slow");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
    HttpResponse<String> duplicate = post("/slow/k-slow");
    release.countDown();

    assertThat(duplicate.statusCode()).isEqualTo(409);
    assertThat(duplicate.headers().firstValue("Content-Type"))
        .contains("application/problem+json");
    assertThat(duplicate.body()).contains(IdempotencyProblem.IN_PROGRESS.type());
    // The lease left on the original (5 s), since once.http.retry-after (10 s) is longer.
    assertThat(Long.parseLong(duplicate.headers().firstValue("Retry-After").orElseThrow()))
        .isBetween(2L, 5L);
    assertThat(original.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(post("/slow/k-slow").body()).isEqualTo(original.get().body());
  }

  @Test
  void aReplayedTerminalFailureIs500MarkedReplayed() throws Exception {
    HttpResponse<String> original = post("/declines/k-declined");
    HttpResponse<String> retry = post("/declines/k-declined");

    assertThat(original.body()).contains("catch-all", "card declined"); // the method's own
    assertThat(retry.statusCode()).isEqualTo(500);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(retry.body()).contains(IdempotencyProblem.ORIGINAL_FAILED.type());
  }

  @Test
  void aDuplicateOfAResultNotStoredIs200MarkedReplayed() throws Exception {
    int before = payments.runs();
    HttpResponse<String> original = post("/reports/k-big");
    HttpResponse<String> retry = post("/reports/k-big");

    assertThat(original.statusCode()).isEqualTo(200);
    assertThat(original.body()).hasSize(4000);
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(retry.body()).contains(IdempotencyProblem.RESPONSE_NOT_STORED.type());
    assertThat(payments.runs()).isEqualTo(before + 1);
  }

  @Test
  void underTheFilterAnInProgressCallIsNotStoredAs409() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    payments.holdNextSlowCall(entered, release);
    CompletableFuture<HttpResponse<String>> original = CompletableFuture.supplyAsync(() -> {
      try {
        return post("/slow/k-filtered");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
    // The filter claims its own key, then the method finds the original running: a 409 stored
    // under the request's key would be replayed to every retry, so the exception goes through.
    HttpResponse<String> busy = post("/filtered/slow/k-filtered", "request-1");
    release.countDown();
    original.get(30, TimeUnit.SECONDS);
    HttpResponse<String> retry = post("/filtered/slow/k-filtered", "request-1");

    assertThat(busy.statusCode()).isEqualTo(500);
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(retry.body()).isEqualTo(original.get().body());
  }

  @Test
  void aMissingKeyIs400() throws Exception {
    HttpResponse<String> missing = post("/orders");

    // Issue 24: the filter's vocabulary (it answered "missing" where this said "invalid").
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.body()).contains(IdempotencyProblem.KEY_MISSING.type())
        .contains("\"title\":\"" + IdempotencyProblem.KEY_MISSING.title() + "\"")
        .doesNotContain("#key"); // the expression stays on the server
  }

  @Test
  void aMalformedKeyIs400Invalid() throws Exception {
    HttpResponse<String> malformed = post("/charges/" + "k".repeat(300) + "?amount=1");

    assertThat(malformed.statusCode()).isEqualTo(400);
    assertThat(malformed.body()).contains(IdempotencyProblem.KEY_INVALID.type());
  }

  @Autowired
  ProblemDetailsApplication.Refunds refunds;

  /**
   * Issue 24: a controller returning {@code ResponseEntity<T>} answered its first call and then
   * 500 to every retry for the whole retention (the entity was stored as JSON it could not be
   * read back from). Now the status, the allow-listed headers and the body are replayed, marked.
   */
  @Test
  void aResponseEntityIsReplayedWithItsStatusHeadersAndBodyMarkedReplayed() throws Exception {
    int before = refunds.runs();
    HttpResponse<String> first = post("/refunds?amount=700", "r-entity");
    HttpResponse<String> retry = post("/refunds?amount=700", "r-entity");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Set-Cookie")).isPresent();
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.headers().firstValue("Set-Cookie")).as("never replayed").isEmpty();
    assertThat(refunds.runs()).isEqualTo(before + 1);
    assertThat(post("/refunds?amount=900", "r-entity").statusCode()).isEqualTo(422);
  }

  @Test
  void aResponseEntityReturnedWhereAnHttpEntityIsDeclaredKeepsItsStatus() throws Exception {
    HttpResponse<String> first = post("/refunds/created?amount=3", "r-created");
    HttpResponse<String> retry = post("/refunds/created?amount=3", "r-created");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.body()).isEqualTo(first.body());
  }

  @Test
  void aServerErrorAnsweredByAResponseEntityIsNotStoredTheRetryRunsAgain() throws Exception {
    int before = refunds.runs();
    HttpResponse<String> first = post("/refunds/unavailable", "r-503");
    HttpResponse<String> retry = post("/refunds/unavailable", "r-503");

    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(retry.statusCode()).isEqualTo(503);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(refunds.runs()).as("run again, as the filter does for a 5xx").isEqualTo(before + 2);
  }

  @Test
  void aServiceCallReplayedInsideAControllerDoesNotMarkTheResponse() throws Exception {
    post("/charges/k-service?amount=5");
    HttpResponse<String> again = post("/charges/k-service?amount=5");

    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).isEmpty();
  }

  /**
   * Issue 24: every return type a controller commonly has, over real HTTP: the first call and
   * its retry answer the same status and body, the retry marked, the method run once.
   */
  @Test
  void everyCommonReturnTypeIsReplayedAsTheFirstAnswer() throws Exception {
    for (String path : List.of("/refunds/void", "/refunds/optional?amount=4",
        "/refunds/optional?amount=0", "/refunds/list", "/refunds/count", "/refunds/problem")) {
      int before = refunds.runs();
      String key = "r-matrix-" + path.hashCode();
      HttpResponse<String> first = post(path, key);
      HttpResponse<String> retry = post(path, key);

      assertThat(retry.statusCode()).as(path).isEqualTo(first.statusCode());
      assertThat(retry.body()).as(path).isEqualTo(first.body());
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).as(path).contains("true");
      assertThat(refunds.runs()).as(path).isLessThanOrEqualTo(before + 1);
    }
  }

  @Test
  void aRecordReturnedByAControllerIsReplayedMarkedReplayed() throws Exception {
    HttpResponse<String> first = post("/refunds/preview?amount=5", "r-record");
    HttpResponse<String> retry = post("/refunds/preview?amount=5", "r-record");

    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
  }

  private HttpResponse<String> post(String path) throws Exception {
    return post(path, null);
  }

  private HttpResponse<String> post(String path, String idempotencyKey) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + path)).POST(HttpRequest.BodyPublishers.noBody());
    if (idempotencyKey != null) {
      request.header("Idempotency-Key", idempotencyKey);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
