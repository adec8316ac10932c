package dev.once.spring.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.spring.internal.OrderedWebFilter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.server.reactive.context.ReactiveWebServerApplicationContext;
import org.springframework.context.ApplicationContext;
import org.springframework.web.server.WebFilter;

/**
 * The starter in a real reactive Spring Boot application on Reactor Netty and a random port, its
 * store on SQLite, over real HTTP: the IdempotencyWebFilter auto-configured from {@code once.http.*} (paths, scope, API-key
 * tenants, order) and a customizer; replays, refusals, a duplicate in progress, and no store call
 * on an event loop.
 */
@SpringBootTest(classes = ReactiveFilterApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "spring.main.web-application-type=reactive",
        "server.address=127.0.0.1",
        "once.jdbc.create-schema=true",
        "once.http.paths=/charges/**",
        "once.http.scope=payments",
        "once.http.tenant-header=X-Api-Key",
        "once.http.filter-order=5"})
class ReactiveHttpFilterTest {

  @LocalServerPort
  int port;

  @Autowired
  ApplicationContext context;

  @Autowired
  ReactiveFilterApplication.Charges charges;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void theFilterIsAutoConfiguredOnReactorNettyFromTheProperties() {
    assertThat(((ReactiveWebServerApplicationContext) context).getWebServer().getClass()
        .getSimpleName()).isEqualTo("NettyWebServer");
    OrderedWebFilter filter = context.getBean(OrderedWebFilter.class);
    assertThat(filter.getOrder()).isEqualTo(5);
    assertThat(filter.filter().config().paths()).containsExactly("/charges/**");
    assertThat(filter.filter().config().scope()).isEqualTo("payments");
    assertThat(context.getBeansOfType(WebFilter.class)).hasSize(1);
    assertThat(context.getBeanNamesForType(dev.once.servlet.IdempotencyFilter.class)).isEmpty();
    assertThat(context.getBean(dev.once.spi.IdempotencyStore.class).getClass().getSimpleName())
        .isEqualTo("JdbcStore");
  }

  @Test
  void aRetryReplaysTheOriginalResponseByteForByte() throws Exception {
    int before = charges.runs.get();
    HttpResponse<byte[]> first = post("/charges", "key-replay", "sk_1", "{\"amount\":500}");
    HttpResponse<byte[]> retry = post("/charges", "key-replay", "sk_1", "{ \"amount\" : 500 }");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(first.headers().firstValue("Set-Cookie")).isPresent();
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.headers().firstValue("Content-Type"))
        .isEqualTo(first.headers().firstValue("Content-Type"));
    assertThat(retry.headers().firstValue("Set-Cookie")).isEmpty();
    assertThat(charges.runs.get()).isEqualTo(before + 1);

    // Another tenant's same key is another record.
    HttpResponse<byte[]> other = post("/charges", "key-replay", "sk_2", "{\"amount\":500}");
    assertThat(other.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(charges.runs.get()).isEqualTo(before + 2);
  }

  @Test
  void refusalsAreTheServletFiltersProblems() throws Exception {
    HttpResponse<byte[]> missing = post("/charges", null, "sk_1", "{}");
    HttpResponse<byte[]> noTenant = post("/charges", "key-t", null, "{}");
    post("/charges", "key-reuse", "sk_1", "{\"amount\":1}");
    HttpResponse<byte[]> reused = post("/charges", "key-reuse", "sk_1", "{\"amount\":2}");

    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(new String(missing.body())).contains("idempotency-key-missing")
        .contains("\"instance\":\"/charges\"");
    assertThat(noTenant.statusCode()).isEqualTo(403);
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(new String(reused.body())).contains("idempotency-key-reused");
  }

  @Test
  void aDuplicateWhileTheOriginalRunsIsA409WithTheCustomizersRetryAfter() throws Exception {
    CompletableFuture<HttpResponse<byte[]>> first = http.sendAsync(
        request("/charges/held/a", "key-held", "sk_1", "{}"),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(charges.entered("a").await(20, TimeUnit.SECONDS)).isTrue();

    HttpResponse<byte[]> duplicate = post("/charges/held/a", "key-held", "sk_1", "{}");
    assertThat(duplicate.statusCode()).isEqualTo(409);
    assertThat(duplicate.headers().firstValue("Retry-After")).contains("2");

    charges.release("a").countDown();
    assertThat(first.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    HttpResponse<byte[]> replay = post("/charges/held/a", "key-held", "sk_1", "{}");
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(new String(replay.body())).isEqualTo("released a");
  }

  @Test
  void noStoreCallRunsOnAnEventLoopThread() throws Exception {
    post("/charges", "key-threads", "sk_1", "{}");
    post("/charges", "key-threads", "sk_1", "{}");

    assertThat(ReactiveFilterApplication.STORE_THREADS).isNotEmpty()
        .noneMatch(name -> name.startsWith("reactor-http"));
  }

  private HttpRequest request(String path, String key, String apiKey, String body) {
    HttpRequest.Builder builder = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      builder.header("Idempotency-Key", key);
    }
    if (apiKey != null) {
      builder.header("X-Api-Key", apiKey);
    }
    return builder.build();
  }

  private HttpResponse<byte[]> post(String path, String key, String apiKey, String body)
      throws Exception {
    return http.send(request(path, key, apiKey, body), HttpResponse.BodyHandlers.ofByteArray());
  }
}
