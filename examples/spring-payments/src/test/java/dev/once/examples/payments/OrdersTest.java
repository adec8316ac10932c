package dev.once.examples.payments;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * {@code POST /orders} over real HTTP: the {@code @Idempotent} controller keyed on the
 * {@code Idempotency-Key} header, running the {@link Checkout} saga on the PostgreSQL store.
 */
class OrdersTest extends PaymentsTestBase {

  @Autowired
  Courier courier;

  @Autowired
  Mailer mailer;

  @Autowired
  JdbcInventory inventory;

  @Test
  void aRetriedOrderIsReplayedAndPlacedOnce() throws Exception {
    wallet("olga", 10_000);
    stock("book", 5);
    String order = order("olga", "book", 2, 3_000, "1 Main St");

    HttpResponse<String> first = post("/orders", "order-olga-1", order);
    HttpResponse<String> retry = post("/orders", "order-olga-1", order); // the client retried

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(retry.headers().firstValue("Location"))
        .isEqualTo(first.headers().firstValue("Location"));
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    assertThat(balance("olga")).isEqualTo(7_000);
    assertThat(inventory.available("book")).isEqualTo(3);
    assertThat(courier.bookings()).containsOnlyOnce("1 Main St");
    assertThat(mailer.sent()).filteredOn(m -> m.startsWith("olga@")).hasSize(1);
    assertThatKey(once, recorder, IdempotencyKey.of("orders", "order-olga-1"))
        .ranOnce().succeeded().wasReplayed(1);
  }

  @Test
  void anOrderWithoutAKeyIsRefused() throws Exception {
    HttpResponse<String> noKey = post("/orders", null, order("olga", "book", 1, 100, "1 Main St"));

    assertThat(noKey.statusCode()).isEqualTo(400);
    assertThat(noKey.body()).contains("idempotency-key-missing");
  }

  @Test
  void anOrderNoCourierDeliversIsRefundedAndReleased() throws Exception {
    wallet("pia", 10_000);
    stock("lamp", 1);
    String order = order("pia", "lamp", 1, 4_000, "Nowhere Lane 1");

    HttpResponse<String> first = post("/orders", "order-pia-1", order);
    HttpResponse<String> retry = post("/orders", "order-pia-1", order);

    assertThat(first.statusCode()).isEqualTo(422);
    assertThat(first.body()).contains("/problems/order-refused", "no courier delivers to");
    assertThat(retry.statusCode()).isEqualTo(422);
    assertThat(retry.body()).contains("/problems/order-refused");
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
    // Charged, then refunded; reserved, then released: newest first, each once.
    assertThat(balance("pia")).isEqualTo(10_000);
    assertThat(charges("pia")).isEqualTo(1);
    assertThat(jdbc.queryForObject("SELECT count(*) FROM refund r JOIN charge c"
        + " ON c.id = r.charge_id WHERE c.wallet_id = 'pia'", Long.class)).isEqualTo(1);
    assertThat(inventory.available("lamp")).isEqualTo(1);
    assertThat(mailer.sent()).noneMatch(m -> m.startsWith("pia@"));
    assertThatKey(once, recorder, IdempotencyKey.of("orders", "order-pia-1"))
        .ranOnce().failedFor(UndeliverableException.class).compensated("charge", "reserve")
        .wasReplayed(1);
  }

  @Test
  void aRetryAfterTheMailerWasDownDoesNotRepeatTheStepsDone() throws Exception {
    wallet("quinn", 10_000);
    stock("mug", 3);
    String order = order("quinn", "mug", 1, 1_500, "2 Quay St");
    mailer.downFor(1);

    HttpResponse<String> first = post("/orders", "order-quinn-1", order);  // mail failed
    HttpResponse<String> retry = post("/orders", "order-quinn-1", order);  // runs again

    assertThat(first.statusCode()).isEqualTo(500);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
    // The retry got the reservation, the charge and the booking from the journal.
    assertThat(balance("quinn")).isEqualTo(8_500);
    assertThat(charges("quinn")).isEqualTo(1);
    assertThat(inventory.available("mug")).isEqualTo(2);
    assertThat(courier.bookings()).containsOnlyOnce("2 Quay St");
    assertThat(mailer.sent()).filteredOn(m -> m.startsWith("quinn@")).hasSize(1);
    assertThatKey(once, recorder, IdempotencyKey.of("orders", "order-quinn-1"))
        .ran(2).succeeded().wasReplayed(0);
  }

  private void stock(String sku, int available) {
    jdbc.update("INSERT INTO stock (sku, available) VALUES (?, ?) ON CONFLICT (sku) DO UPDATE"
        + " SET available = excluded.available", sku, available);
  }

  private static String order(String wallet, String sku, int quantity, long amount,
      String address) {
    return """
        {"wallet": "%s", "sku": "%s", "quantity": %d, "amount": %d, "address": "%s",
         "email": "%s@example.com"}""".formatted(wallet, sku, quantity, amount, address, wallet);
  }
}
