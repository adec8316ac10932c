package dev.once.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.spi.IdempotencyStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/** The README's usage, compiled and run on Reactor Netty, so the example cannot rot. */
class ReadmeExampleTest {

  static final AtomicInteger charges = new AtomicInteger();

  /** The application: creates a charge per POST, as a functional endpoint. */
  static final RouterFunction<ServerResponse> ROUTES = RouterFunctions.route()
      .POST("/payments/charges", request -> ServerResponse.status(201)
          .contentType(MediaType.APPLICATION_JSON)
          .bodyValue("{\"id\":\"ch_" + charges.incrementAndGet() + "\"}"))
      .build();

  /** How a WebFlux application without Spring Boot puts the filter in front of its routes. */
  static HttpHandler setup(IdempotencyStore store, ExecutorService storeThreads) {
    // --- README usage, verbatim ---
    Once once = Once.builder(store)                         // InMemoryStore, JdbcStore, …
        .lease(Duration.ofSeconds(30))
        .asyncExecutor(storeThreads)                        // where store calls block (below)
        .build();
    IdempotencyWebFilter filter = IdempotencyWebFilter.builder(once)
        .paths("/payments/**")                              // POST and PATCH by default
        .tenantResolver(TenantResolver.header("X-Api-Key")) // or principal(), or your lambda
        .build();
    HttpHandler handler = RouterFunctions.toHttpHandler(ROUTES,
        HandlerStrategies.builder().webFilter(filter).build());
    // --- end ---
    return handler;
  }

  @Test
  void theReadmeSetupMakesARetryAReplay() throws Exception {
    ExecutorService storeThreads = Executors.newFixedThreadPool(4);
    DisposableServer server = HttpServer.create().host("127.0.0.1").port(0)
        .handle(new ReactorHttpHandlerAdapter(setup(new InMemoryStore(), storeThreads)))
        .bindNow(Duration.ofSeconds(20));
    try {
      HttpClient client = HttpClient.newHttpClient();
      HttpRequest request = HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + server.port() + "/payments/charges"))
          .header("Idempotency-Key", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"")
          .header("X-Api-Key", "sk_test_123")
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":1000}"))
          .build();

      HttpResponse<String> first = client.send(request, HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> retry = client.send(request, HttpResponse.BodyHandlers.ofString());

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(first.body()).isEqualTo("{\"id\":\"ch_1\"}");
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.body()).isEqualTo(first.body());
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(retry.headers().firstValue("Content-Type"))
          .isEqualTo(first.headers().firstValue("Content-Type"));
      assertThat(charges.get()).isEqualTo(1);
    } finally {
      server.disposeNow(Duration.ofSeconds(10));
      storeThreads.shutdownNow();
    }
  }
}
