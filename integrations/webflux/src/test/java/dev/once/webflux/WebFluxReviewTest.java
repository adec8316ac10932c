package dev.once.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.core.codec.EncodingException;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebHandler;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Review of once-webflux: each test is a scenario that breaks a rule of the library. */
class WebFluxReviewTest {

  final AtomicInteger runs = new AtomicInteger();
  final ExecutorService pool = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "review-store");
    t.setDaemon(true);
    return t;
  });

  @AfterEach
  void stop() {
    pool.shutdownNow();
  }

  static Mono<Void> text(ServerHttpResponse res, String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    res.getHeaders().setContentType(MediaType.TEXT_PLAIN);
    return res.writeWith(Mono.fromSupplier(() -> res.bufferFactory().wrap(bytes)));
  }

  static HttpResponse<String> post(TestServer server, String path, String key, String body,
      String contentType) throws Exception {
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    HttpRequest.Builder request = HttpRequest.newBuilder(server.uri(path))
        .timeout(Duration.ofSeconds(20))
        .header("Content-Type", contentType)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  static HttpResponse<String> post(TestServer server, String path, String key) throws Exception {
    return post(server, path, key, "{}", "application/json");
  }

  IdempotencyWebFilter filter() {
    return IdempotencyWebFilter.builder(Once.builder(new InMemoryStore()).build()).build();
  }

  // ---- setRawStatusCode bypasses the capture -------------------------------------------------

  @Test
  void aStatusSetWithSetRawStatusCodeIsStoredAndReplayedAsItWasSent() throws Exception {
    WebHandler handler = exchange -> {
      runs.incrementAndGet();
      exchange.getResponse().setRawStatusCode(201);
      return text(exchange.getResponse(), "created");
    };
    try (TestServer server = TestServer.start(List.of(filter()), handler)) {
      HttpResponse<String> first = post(server, "/charges", "raw-1");
      HttpResponse<String> retry = post(server, "/charges", "raw-1");

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(retry.statusCode()).as("replayed status").isEqualTo(first.statusCode());
    }
  }

  @Test
  void aServerErrorSetWithSetRawStatusCodeIsNotStoredAsA200() throws Exception {
    WebHandler handler = exchange -> {
      runs.incrementAndGet();
      exchange.getResponse().setRawStatusCode(503);
      return text(exchange.getResponse(), "try later");
    };
    try (TestServer server = TestServer.start(List.of(filter()), handler)) {
      HttpResponse<String> first = post(server, "/charges", "raw-2");
      HttpResponse<String> retry = post(server, "/charges", "raw-2");

      assertThat(first.statusCode()).isEqualTo(503);
      // a 5xx is not stored: the retry runs again, and never gets a 200 for a failed request
      assertThat(retry.statusCode()).as("retry status").isNotEqualTo(200);
      assertThat(runs.get()).isEqualTo(2);
    }
  }

  // ---- a form read by an earlier filter (Spring Security's CsrfWebFilter does) ---------------

  @Test
  void aFormReadByAnEarlierFilterStillReachesTheProtectedHandler() throws Exception {
    WebFilter csrfLike = (exchange, chain) -> exchange.getFormData().then(chain.filter(exchange));
    WebHandler handler = exchange -> exchange.getFormData()
        .flatMap(form -> text(exchange.getResponse(), "form " + form.toSingleValueMap()));
    String form = "amount=10&currency=EUR";
    try (TestServer server = TestServer.start(List.of(csrfLike, filter()), handler)) {
      HttpResponse<String> unprotected = post(server, "/charges", null, form,
          "application/x-www-form-urlencoded");
      HttpResponse<String> protectedOne = post(server, "/charges", "form-1", form,
          "application/x-www-form-urlencoded");

      System.out.println("unprotected (no key -> 400 expected): " + unprotected.statusCode()
          + " " + unprotected.body());
      System.out.println("protected: " + protectedOne.statusCode() + " " + protectedOne.body());
      assertThat(protectedOne.statusCode()).isEqualTo(200);
      assertThat(protectedOne.body()).isEqualTo("form {amount=10, currency=EUR}");
    }
  }

  // ---- an error after the handler answered ---------------------------------------------------

  @Test
  void anErrorFromALaterFilterAfterTheHandlerAnsweredDoesNotRunItAgain() throws Exception {
    WebFilter later = (exchange, chain) -> chain.filter(exchange)
        .then(Mono.error(new IllegalStateException("a later filter failed after the handler")));
    WebHandler handler = exchange -> {
      runs.incrementAndGet();
      return text(exchange.getResponse(), "charged");
    };
    try (TestServer server = TestServer.start(List.of(filter(), later), handler)) {
      HttpResponse<String> first = post(server, "/charges", "late-1");
      HttpResponse<String> retry = post(server, "/charges", "late-1");
      System.out.println("later filter: " + first.statusCode() + " / " + retry.statusCode());

      assertThat(runs.get()).as("handler runs").isEqualTo(1);
    }
  }

  @Test
  void aCodecErrorAfterTheHandlerWrotePartOfTheBodyDoesNotRunItAgain() throws Exception {
    WebHandler handler = exchange -> {
      runs.incrementAndGet(); // the charge happened; the encoder then fails mid-body
      ServerHttpResponse res = exchange.getResponse();
      Flux<DataBuffer> body = Flux.concat(
          Mono.fromSupplier(() -> res.bufferFactory().wrap("{\"id\":".getBytes())),
          Mono.error(new EncodingException("cannot serialize field")));
      return res.writeWith(body);
    };
    try (TestServer server = TestServer.start(List.of(filter()), handler)) {
      HttpResponse<String> first = post(server, "/charges", "codec-1");
      HttpResponse<String> retry = post(server, "/charges", "codec-1");
      System.out.println("codec: " + first.statusCode() + " / " + retry.statusCode());

      assertThat(runs.get()).as("handler runs").isEqualTo(1);
    }
  }

  // ---- over the bound with a declared length -------------------------------------------------

  @Test
  void anAnswerOverTheBoundIsNotCompleteAtTheClientBeforeItsOutcomeIsStored() throws Exception {
    AtomicBoolean slowNext = new AtomicBoolean();
    AtomicBoolean stored = new AtomicBoolean();
    java.util.concurrent.CountDownLatch answered = new java.util.concurrent.CountDownLatch(1);
    Once once = Once.builder(new InMemoryStore())
        .asyncExecutor(task -> pool.execute(() -> {
          if (slowNext.getAndSet(false)) {
            try {
              // the store is slow to take the outcome: at most until the client has its answer
              answered.await(5, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            task.run();
            stored.set(true);
            return;
          }
          task.run();
        })).build();
    IdempotencyWebFilter filter =
        IdempotencyWebFilter.builder(once).maxResponseBytes(1024).build();
    WebHandler handler = exchange -> {
      runs.incrementAndGet();
      ServerHttpResponse res = exchange.getResponse();
      byte[] body = new byte[4096];
      Arrays.fill(body, (byte) 'x');
      res.getHeaders().setContentType(MediaType.APPLICATION_OCTET_STREAM);
      res.getHeaders().setContentLength(body.length); // as Spring's encoders do for a Mono
      return res.writeWith(Mono.fromSupplier(() -> res.bufferFactory().wrap(body)))
          .then(Mono.fromRunnable(() -> slowNext.set(true)));
    };
    try (TestServer server = TestServer.start(List.of(filter), handler)) {
      HttpResponse<String> first = post(server, "/charges", "big-1");
      boolean storedWhenAnswered = stored.get();
      // a retry the instant the whole answer arrived, on a new connection
      HttpResponse<String> retry = post(server, "/charges", "big-1");
      answered.countDown();
      System.out.println("big: first " + first.statusCode() + " " + first.body().length()
          + " bytes, outcome stored then: " + storedWhenAnswered + "; instant retry "
          + retry.statusCode());

      assertThat(first.body()).hasSize(4096);
      assertThat(storedWhenAnswered).as("outcome stored before the client had the whole answer")
          .isTrue();
      assertThat(retry.statusCode()).as("instant retry of a complete answer").isNotEqualTo(409);
    }
  }

  // ---- the body written twice ----------------------------------------------------------------

  @Test
  void aBodyWrittenTwiceIsAnsweredAsWithoutTheFilter() throws Exception {
    WebHandler handler = exchange -> {
      ServerHttpResponse res = exchange.getResponse();
      return res.writeWith(Mono.fromSupplier(() -> res.bufferFactory().wrap("one".getBytes())))
          .then(Mono.defer(() -> res.writeWith(
              Mono.fromSupplier(() -> res.bufferFactory().wrap("two".getBytes())))))
          .onErrorResume(e -> Mono.empty());
    };
    IdempotencyWebFilter filter = IdempotencyWebFilter.builder(
        Once.builder(new InMemoryStore()).build()).excludePaths("/open").build();
    try (TestServer server = TestServer.start(List.of(filter), handler)) {
      HttpResponse<String> open = post(server, "/open", null);
      HttpResponse<String> held = post(server, "/charges", "twice-1");
      System.out.println("twice: open '" + open.body() + "' held '" + held.body() + "'");
      assertThat(held.body()).isEqualTo(open.body());
    }
  }
}
