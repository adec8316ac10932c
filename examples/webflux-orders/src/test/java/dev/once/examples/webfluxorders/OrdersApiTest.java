package dev.once.examples.webfluxorders;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.web.server.reactive.context.ReactiveWebServerApplicationContext;

/**
 * {@code POST /orders} behind the auto-configured {@code IdempotencyWebFilter}, over real HTTP:
 * retries replay, a reused key is refused, racing duplicates run the handler once.
 */
class OrdersApiTest extends OrdersTestBase {

  @Autowired
  ReactiveWebServerApplicationContext context;

  @Test
  void theApplicationRunsOnReactorNettyWithTheStartersFilter() {
    // The point of the example: a reactive application, protected with no filter code of its own.
    assertThat(context.getWebServer().getClass().getSimpleName()).isEqualTo("NettyWebServer");
    assertThat(context.getBeanNamesForType(dev.once.webflux.IdempotencyWebFilter.class))
        .as("the starter's filter, not one the application declared").isEmpty();
    assertThat(context.containsBean("onceIdempotencyWebFilter")).isTrue();
    assertThat(once.store().getClass().getSimpleName()).isEqualTo("JdbcStore");
  }

  @Test
  void aRetryGetsTheFirstAnswerByteForByteAndTheWarehouseIsCalledOnce() throws Exception {
    long ordersBefore = orders.count();
    HttpResponse<byte[]> first = send(post("/orders", "order-retry",
        "{\"customer\":\"bob\",\"sku\":\"book\",\"quantity\":2}"));
    // The client timed out and sends it again: the same JSON, written differently.
    HttpResponse<byte[]> retry = send(post("/orders", "order-retry",
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

    String id = first.headers().firstValue("Location").orElseThrow().substring("/orders/".length());
    assertThat(warehouse.picks()).containsOnlyOnce(id);
    assertThat(orders.count()).isEqualTo(ordersBefore + 1);
    assertThatKey(once, recorder, IdempotencyKey.of("http", "order-retry"))
        .ranOnce().succeeded().wasReplayed(1);
    assertThat(text(get("/orders/" + id))).isEqualTo(text(first));
  }

  @Test
  void theSameKeyWithAnotherOrderIsRefusedWith422() throws Exception {
    HttpResponse<byte[]> first = send(post("/orders", "order-reused",
        "{\"customer\":\"bob\",\"sku\":\"pen\",\"quantity\":1}"));
    int picks = warehouse.picks().size();
    HttpResponse<byte[]> reused = send(post("/orders", "order-reused",
        "{\"customer\":\"bob\",\"sku\":\"pen\",\"quantity\":10}"));

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(reused.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(text(reused)).contains("idempotency-key-reused").contains("\"status\":422")
        .contains("\"instance\":\"/orders\"");
    assertThat(warehouse.picks()).hasSize(picks);
  }

  @Test
  void anOrderWithoutAKeyIsRefusedWith400AndNothingRuns() throws Exception {
    long ordersBefore = orders.count();
    HttpResponse<byte[]> missing = send(post("/orders", null,
        "{\"customer\":\"bob\",\"sku\":\"pen\",\"quantity\":1}"));

    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(text(missing)).contains("idempotency-key-missing");
    assertThat(orders.count()).isEqualTo(ordersBefore);
  }

  @Test
  void aRefusedOrderIsAnAnswerToo() throws Exception {
    // The handler's own 400 is below 500: stored and replayed for its key like a 201.
    HttpResponse<byte[]> first = send(post("/orders", "order-unknown-sku",
        "{\"customer\":\"bob\",\"sku\":\"piano\",\"quantity\":1}"));
    HttpResponse<byte[]> retry = send(post("/orders", "order-unknown-sku",
        "{\"customer\":\"bob\",\"sku\":\"piano\",\"quantity\":1}"));

    assertThat(first.statusCode()).isEqualTo(400);
    assertThat(text(first)).contains("[book, lamp, pen]");
    assertThat(retry.statusCode()).isEqualTo(400);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(text(retry)).isEqualTo(text(first));
    // No sku at all: the same 400, not a 500 from the catalog lookup.
    assertThat(send(post("/orders", "order-no-sku", "{\"customer\":\"bob\",\"quantity\":1}"))
        .statusCode()).isEqualTo(400);
  }

  @Test
  void eightRacingDuplicatesPlaceOneOrder() throws Exception {
    int clients = 8;
    long ordersBefore = orders.count();
    int picksBefore = warehouse.picks().size();
    HttpRequest request = post("/orders", "order-race",
        "{\"customer\":\"carol\",\"sku\":\"lamp\",\"quantity\":1}");
    ExecutorService threads = Executors.newFixedThreadPool(clients);
    try {
      // Each thread waits at the gate, then all send at once: the duplicates arrive while the
      // first is running, wait for it (once.in-progress-wait) and get its replay.
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
          .as("answered by the handler itself").hasSize(1);
      assertThat(orders.count()).isEqualTo(ordersBefore + 1);
      assertThat(warehouse.picks()).hasSize(picksBefore + 1);
      assertThatKey(once, recorder, IdempotencyKey.of("http", "order-race"))
          .ranOnce().wasReplayed(clients - 1);
    } finally {
      threads.shutdownNow();
    }
  }
}
