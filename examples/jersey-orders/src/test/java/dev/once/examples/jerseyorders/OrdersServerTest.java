package dev.once.examples.jerseyorders;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.testkit.OnceRecorder;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The orders API as {@code main} starts it — Jersey on Grizzly, the feature over a SQLite file —
 * on 127.0.0.1 and a free port, called over real sockets: retries replay, a reused key is refused,
 * racing duplicates run the resource once, and the records outlive the process.
 */
class OrdersServerTest {

  @TempDir
  static Path directory;

  static OnceRecorder recorder = new OnceRecorder();
  static OrdersServer server;

  // HTTP/1.1: the JDK client's default asks to upgrade to h2c, and on Grizzly (no HTTP/2 add-on)
  // the body of such a POST does not arrive (once-jaxrs's ReadmeExampleTest found it).
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @BeforeAll
  static void start() throws Exception {
    server = OrdersServer.start(0, directory.resolve("orders.db"), recorder);
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  @Test
  void aRetryGetsTheFirstAnswerByteForByteAndTheWarehouseIsCalledOnce() throws Exception {
    long ordersBefore = server.orders().count();
    HttpResponse<byte[]> first = send(post(server, "order-retry",
        "{\"customer\":\"bob\",\"sku\":\"book\",\"quantity\":2}"));
    // The client timed out and sends it again: the same JSON, written differently.
    HttpResponse<byte[]> retry = send(post(server, "order-retry",
        "{ \"quantity\": 2, \"sku\": \"book\", \"customer\": \"bob\" }"));

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(text(first)).matches(
        "\\{\"id\":\"ord_[0-9a-f]{8}\",\"customer\":\"bob\",\"sku\":\"book\",\"quantity\":2,"
            + "\"total\":2400}");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(text(retry)).isEqualTo(text(first));
    assertThat(retry.body()).isEqualTo(first.body());   // byte for byte
    assertThat(retry.headers().firstValue("Location")).isPresent()
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.headers().firstValue("Content-Type"))
        .isEqualTo(first.headers().firstValue("Content-Type"));

    String id = first.headers().firstValue("Location").orElseThrow().replaceAll(".*/", "");
    assertThat(server.warehouse().picks()).containsOnlyOnce(id);
    assertThat(server.orders().count()).isEqualTo(ordersBefore + 1);
    assertThatKey(server.once(), recorder, IdempotencyKey.of("http", "order-retry"))
        .ranOnce().succeeded().wasReplayed(1);
    assertThat(text(send(HttpRequest.newBuilder(uri(server, "/orders/" + id)).build())))
        .isEqualTo(text(first));
  }

  @Test
  void theSameKeyWithAnotherOrderIsRefusedWith422() throws Exception {
    HttpResponse<byte[]> first = send(post(server, "order-reused",
        "{\"customer\":\"bob\",\"sku\":\"pen\",\"quantity\":1}"));
    int picks = server.warehouse().picks().size();
    HttpResponse<byte[]> reused = send(post(server, "order-reused",
        "{\"customer\":\"bob\",\"sku\":\"pen\",\"quantity\":10}"));

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(reused.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(text(reused)).contains("idempotency-key-reused").contains("\"status\":422")
        .contains("\"instance\":\"/orders\"");
    assertThat(server.warehouse().picks()).hasSize(picks);
  }

  @Test
  void anOrderWithoutAKeyIsRefusedWith400AndNothingRuns() throws Exception {
    long ordersBefore = server.orders().count();
    HttpResponse<byte[]> missing = send(post(server, null,
        "{\"customer\":\"bob\",\"sku\":\"pen\",\"quantity\":1}"));

    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(text(missing)).contains("idempotency-key-missing");
    assertThat(server.orders().count()).isEqualTo(ordersBefore);
  }

  @Test
  void aRefusedOrderIsAnAnswerToo() throws Exception {
    // The resource's own 400 is below 500: stored and replayed for its key like a 201.
    HttpResponse<byte[]> first = send(post(server, "order-unknown-sku",
        "{\"customer\":\"bob\",\"sku\":\"piano\",\"quantity\":1}"));
    HttpResponse<byte[]> retry = send(post(server, "order-unknown-sku",
        "{\"customer\":\"bob\",\"sku\":\"piano\",\"quantity\":1}"));

    assertThat(first.statusCode()).isEqualTo(400);
    assertThat(first.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(text(first)).contains("[book, lamp, pen]");
    assertThat(retry.statusCode()).isEqualTo(400);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(text(retry)).isEqualTo(text(first));
    // No sku at all: the same 400, not a 500 from the catalog lookup.
    assertThat(send(post(server, "order-no-sku", "{\"customer\":\"bob\",\"quantity\":1}"))
        .statusCode()).isEqualTo(400);
  }

  @Test
  void eightRacingDuplicatesPlaceOneOrder() throws Exception {
    int clients = 8;
    long ordersBefore = server.orders().count();
    int picksBefore = server.warehouse().picks().size();
    HttpRequest request = post(server, "order-race",
        "{\"customer\":\"carol\",\"sku\":\"lamp\",\"quantity\":1}");
    ExecutorService threads = Executors.newFixedThreadPool(clients);
    try {
      // Each thread waits at the gate, then all send at once: the duplicates arrive while the
      // first is running, wait for it (InProgressPolicy.waitUpTo) and get its replay.
      CountDownLatch gate = new CountDownLatch(1);
      List<Future<HttpResponse<byte[]>>> racing = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        racing.add(threads.submit(() -> {
          gate.await();
          return send(request);
        }));
      }
      gate.countDown();
      List<HttpResponse<byte[]>> responses = new ArrayList<>();
      for (Future<HttpResponse<byte[]>> response : racing) {
        responses.add(response.get(30, TimeUnit.SECONDS));
      }

      assertThat(responses).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(201));
      assertThat(responses).extracting(r -> text(r)).containsOnly(text(responses.get(0)));
      assertThat(responses)
          .filteredOn(r -> r.headers().firstValue("Idempotent-Replayed").isEmpty())
          .as("answered by the resource itself").hasSize(1);
      assertThat(server.orders().count()).isEqualTo(ordersBefore + 1);
      assertThat(server.warehouse().picks()).hasSize(picksBefore + 1);
      assertThatKey(server.once(), recorder, IdempotencyKey.of("http", "order-race"))
          .ranOnce().wasReplayed(clients - 1);
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void theRecordsOutliveTheProcess(@TempDir Path own) throws Exception {
    // A server of its own, stopped, then started again on the same file: the retry after the
    // restart is still a replay, and the new process's warehouse is never called.
    Path database = own.resolve("orders.db");
    HttpResponse<byte[]> first;
    try (OrdersServer before = OrdersServer.start(0, database)) {
      first = send(post(before, "order-restart",
          "{\"customer\":\"dave\",\"sku\":\"pen\",\"quantity\":3}"));
      assertThat(before.warehouse().picks()).hasSize(1);
    }
    try (OrdersServer after = OrdersServer.start(0, database)) {
      HttpResponse<byte[]> retry = send(post(after, "order-restart",
          "{\"customer\":\"dave\",\"sku\":\"pen\",\"quantity\":3}"));

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(text(retry)).isEqualTo(text(first));
      assertThat(after.warehouse().picks()).isEmpty();
      assertThat(after.orders().count()).isEqualTo(1);
    }
  }

  private static URI uri(OrdersServer server, String path) {
    return URI.create("http://127.0.0.1:" + server.port() + path);
  }

  /** A POST /orders of {@code json}, with {@code key} as its Idempotency-Key (none if null). */
  private static HttpRequest post(OrdersServer server, String key, String json) {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri(server, "/orders"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return request.build();
  }

  private HttpResponse<byte[]> send(HttpRequest request) throws IOException, InterruptedException {
    return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
  }

  private static String text(HttpResponse<byte[]> response) {
    return new String(response.body(), StandardCharsets.UTF_8);
  }
}
