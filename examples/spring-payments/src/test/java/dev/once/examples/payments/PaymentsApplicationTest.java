package dev.once.examples.payments;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /charges}, protected by the {@code Idempotency-Key} filter ({@code once.http.paths}),
 * called over real HTTP by clients that retry: concurrent duplicates and sequential retries debit
 * each wallet exactly once per key.
 */
class PaymentsApplicationTest extends PaymentsTestBase {

  private static final ExecutorService CLIENTS = Executors.newFixedThreadPool(16);

  @AfterAll
  static void stop() {
    CLIENTS.shutdownNow();
  }

  @Test
  void concurrentAndSequentialRetriesDebitOncePerKey() throws Exception {
    wallet("alice", 100_000);
    int keys = 5;
    int copies = 4;
    // Every key sent by 4 clients at the same instant: 20 racing requests.
    CountDownLatch start = new CountDownLatch(1);
    List<Future<HttpResponse<String>>> racing = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      for (int c = 0; c < copies; c++) {
        String key = "race-" + k;
        racing.add(CLIENTS.submit(() -> {
          start.await();
          return charge(key, "{\"wallet\": \"alice\", \"amount\": 1000}");
        }));
      }
    }
    start.countDown();
    List<HttpResponse<String>> responses = new ArrayList<>();
    for (Future<HttpResponse<String>> response : racing) {
      responses.add(response.get(60, TimeUnit.SECONDS));
    }
    // Then every key retried twice more, one after the other, with the JSON written differently.
    for (int k = 0; k < keys; k++) {
      for (int retry = 0; retry < 2; retry++) {
        responses.add(charge("race-" + k, "{ \"amount\":1000, \"wallet\":\"alice\" }"));
      }
    }

    assertThat(responses).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(201));
    long fresh = responses.stream()
        .filter(r -> r.headers().firstValue("Idempotent-Replayed").isEmpty()).count();
    assertThat(fresh).isEqualTo(keys);
    assertThat(responses.stream()
        .filter(r -> r.headers().firstValue("Idempotent-Replayed").isPresent()))
        .allSatisfy(r -> assertThat(r.headers().firstValue("Idempotent-Replayed"))
            .contains("true"))
        .hasSize(keys * (copies + 2) - keys);
    Set<String> bodies = new HashSet<>();
    responses.forEach(r -> bodies.add(r.body()));
    assertThat(bodies).hasSize(keys);

    assertThat(balance("alice")).isEqualTo(100_000 - keys * 1000);
    assertThat(charges("alice")).isEqualTo(keys);
  }

  @Test
  void aReplayIsTheOriginalResponse() throws Exception {
    wallet("bob", 5_000);
    HttpResponse<String> first = charge("bob-1", "{\"wallet\": \"bob\", \"amount\": 1200}");
    HttpResponse<String> retry = charge("bob-1", "{\"wallet\": \"bob\", \"amount\": 1200}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.body()).contains("\"balance\":3800");
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(balance("bob")).isEqualTo(3_800);
    // The filter's keys are in the scope once.http.scope ("http"): the request ran once, the
    // retry was its replay; the debit under it ran once too.
    assertThatKey(once, recorder, IdempotencyKey.of("http", "bob-1"))
        .ranOnce().succeeded().wasReplayed(1);
  }

  @Test
  void anotherBodyWithTheSameKeyIs422AndChargesNothing() throws Exception {
    wallet("carol", 5_000);
    assertThat(charge("carol-1", "{\"wallet\": \"carol\", \"amount\": 100}").statusCode())
        .isEqualTo(201);
    HttpResponse<String> misuse = charge("carol-1", "{\"wallet\": \"carol\", \"amount\": 999}");
    assertThat(misuse.statusCode()).isEqualTo(422);
    assertThat(misuse.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(misuse.body()).contains("idempotency-key-reused");
    assertThat(balance("carol")).isEqualTo(4_900);
  }

  @Test
  void aKeyIsRequiredAndInsufficientFundsIsReplayedToo() throws Exception {
    wallet("dave", 500);
    HttpResponse<String> noKey = charge(null, "{\"wallet\": \"dave\", \"amount\": 100}");
    assertThat(noKey.statusCode()).isEqualTo(400);
    assertThat(noKey.body()).contains("idempotency-key-missing");

    HttpResponse<String> poor = charge("dave-1", "{\"wallet\": \"dave\", \"amount\": 900}");
    assertThat(poor.statusCode()).isEqualTo(402);
    wallet("dave", 5_000);  // topped up: a retry of the same key still gets the stored 402
    HttpResponse<String> again = charge("dave-1", "{\"wallet\": \"dave\", \"amount\": 900}");
    assertThat(again.statusCode()).isEqualTo(402);
    assertThat(again.body()).isEqualTo(poor.body());
    assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(balance("dave")).isEqualTo(5_000);
  }

  private HttpResponse<String> charge(String key, String json)
      throws IOException, InterruptedException {
    return post("/charges", key, json);
  }
}
