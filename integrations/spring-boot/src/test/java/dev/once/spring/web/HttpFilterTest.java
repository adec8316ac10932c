package dev.once.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.micrometer.OnceMetrics;
import dev.once.spi.IdempotencyStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The starter in a real web application on a random port (Tomcat, Spring MVC, Actuator) with the
 * store on SQLite, spoken to over real HTTP: the filter registered from properties, replays,
 * misuse, racing retries, the health endpoint and the meters.
 */
@SpringBootTest(classes = HttpFilterApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "server.address=127.0.0.1",
        "management.endpoint.health.show-components=always",
        "once.jdbc.create-schema=true",
        "once.http.paths=/charges/**",
        "once.http.exclude-paths=/charges/preview",
        "once.http.scope=payments"})
class HttpFilterTest {

  private static final ExecutorService POOL = Executors.newFixedThreadPool(6);

  @LocalServerPort
  int port;

  @Autowired
  HttpFilterApplication.Charges charges;

  @Autowired
  IdempotencyStore store;

  @Autowired
  MeterRegistry registry;

  private final HttpClient http = HttpClient.newHttpClient();

  @AfterAll
  static void stopPool() {
    POOL.shutdownNow();
  }

  @Test
  void aRetryReplaysTheOriginalResponse() throws Exception {
    int before = charges.runs();
    HttpResponse<String> first = post("/charges", "key-replay", "{\"amount\": 500}");
    HttpResponse<String> retry = post("/charges", "key-replay", "{ \"amount\":500 }");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.headers().firstValue("Set-Cookie")).isEmpty();
    assertThat(charges.runs()).isEqualTo(before + 1);
    assertThat(store.getClass().getSimpleName()).isEqualTo("JdbcStore");
  }

  @Test
  void theSameKeyWithAnotherBodyIs422AndAMissingKey400() throws Exception {
    post("/charges", "key-misuse", "{\"amount\": 500}");
    HttpResponse<String> misuse = post("/charges", "key-misuse", "{\"amount\": 900}");
    assertThat(misuse.statusCode()).isEqualTo(422);
    assertThat(misuse.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(misuse.body()).contains("idempotency-key-reused");

    HttpResponse<String> missing = post("/charges", null, "{\"amount\": 500}");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.body()).contains("idempotency-key-missing");
  }

  @Test
  void excludedPathsAreNotProtected() throws Exception {
    HttpResponse<String> preview = post("/charges/preview", null, "{\"amount\": 5}");
    assertThat(preview.statusCode()).isEqualTo(200);
  }

  @Test
  void racingRetriesRunTheHandlerOnce() throws Exception {
    int before = charges.runs();
    CountDownLatch start = new CountDownLatch(1);
    List<Future<HttpResponse<String>>> responses = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      responses.add(POOL.submit(() -> {
        start.await();
        return post("/charges", "key-race", "{\"amount\": 700}");
      }));
    }
    start.countDown();
    for (Future<HttpResponse<String>> response : responses) {
      HttpResponse<String> r = response.get(30, TimeUnit.SECONDS);
      assertThat(r.statusCode()).isIn(201, 409);
      if (r.statusCode() == 409) {
        assertThat(r.headers().firstValue("Retry-After")).isPresent();
      }
    }
    HttpResponse<String> settled = post("/charges", "key-race", "{\"amount\": 700}");
    assertThat(settled.statusCode()).isEqualTo(201);
    assertThat(settled.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(charges.runs()).isEqualTo(before + 1);
  }

  @Test
  void theStoresHealthIsOnTheActuatorEndpoint() throws Exception {
    HttpResponse<String> health = http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/actuator/health/once")).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).contains("\"status\":\"UP\"");
  }

  @Test
  void metersCountWhatTheFilterDid() throws Exception {
    post("/charges", "key-meters", "{\"amount\": 1}");
    post("/charges", "key-meters", "{\"amount\": 1}");
    assertThat(registry.get(OnceMetrics.OUTCOMES).tag(OnceMetrics.TAG_SCOPE, "payments")
        .tag(OnceMetrics.TAG_OUTCOME, OnceMetrics.REPLAYED).tag(OnceMetrics.TAG_STORE, "jdbc")
        .counter().count()).isGreaterThanOrEqualTo(1.0);
    assertThat(registry.get(OnceMetrics.STORE_CALLS).tag(OnceMetrics.TAG_OPERATION, "claim")
        .timer().count()).isGreaterThanOrEqualTo(2);
  }

  /**
   * Issue 24: requests the filter answers itself (replays, 409, 422) never reach Spring MVC, so
   * {@code http.server.requests} tagged them {@code uri=UNKNOWN}. They carry their route now.
   */
  @Test
  void requestsTheFilterAnswersAreTaggedWithTheirRouteInHttpServerRequests() throws Exception {
    long before = routed("/charges", "422");
    post("/charges", "key-route", "{\"amount\": 700}");
    HttpResponse<String> replay = post("/charges", "key-route", "{\"amount\": 700}");
    HttpResponse<String> reused = post("/charges", "key-route", "{\"amount\": 900}");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(reused.statusCode()).isEqualTo(422);

    // The server records a request after answering it: wait for the last one.
    dev.once.testkit.Await.until("the 422 recorded with its route",
        () -> routed("/charges", "422") == before + 1);
    assertThat(registry.find("http.server.requests").tag("uri", "UNKNOWN").timers())
        .as("requests without their route").isEmpty();
  }

  private long routed(String uri, String status) {
    var timer = registry.find("http.server.requests").tag("uri", uri).tag("status", status)
        .timer();
    return timer == null ? 0 : timer.count();
  }

  private HttpResponse<String> post(String path, String key, String json) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }
}
