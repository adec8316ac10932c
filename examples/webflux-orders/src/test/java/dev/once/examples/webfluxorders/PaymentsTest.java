package dev.once.examples.webfluxorders;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /orders/{id}/payment}: {@link Payments#pay} is {@code @Idempotent} on the order's
 * id and returns a {@code Mono}; when the store credit covers the order that {@code Mono} is empty,
 * and the empty result is stored, not taken for "nothing stored yet".
 */
class PaymentsTest extends OrdersTestBase {

  @Test
  void paidByStoreCreditTheEmptyResultIsStoredAndTheCreditTakenOnce() throws Exception {
    credit.set("erin", 10_000);
    String order = place("erin", "lamp", 1);   // 4500, all of it from the credit

    HttpResponse<byte[]> first = send(post("/orders/" + order + "/payment", null, ""));
    HttpResponse<byte[]> again = send(post("/orders/" + order + "/payment", null, ""));

    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(text(first)).isEqualTo("{\"order\":\"" + order
        + "\",\"total\":4500,\"byStoreCredit\":4500,\"cardCharge\":null}");
    assertThat(again.statusCode()).isEqualTo(200);
    assertThat(text(again)).isEqualTo(text(first));
    // Had the empty result been taken for "nothing stored", the second call would have run the
    // method again and taken 4500 more.
    assertThat(credit.balance("erin")).isEqualTo(5_500);
    assertThat(gateway.charges()).noneMatch(charge -> charge.order().equals(order));

    // The bean itself, called a third time: the replay is the empty Mono, nothing runs.
    assertThat(payments.pay(order, "erin", 4500).hasElement().block(Duration.ofSeconds(10)))
        .isFalse();
    assertThat(credit.balance("erin")).isEqualTo(5_500);
    assertThatKey(once, recorder, IdempotencyKey.of("orders.payment", order))
        .ranOnce().succeeded().wasReplayed(2);
  }

  @Test
  void paidPartlyByCardTheCardIsChargedOnce() throws Exception {
    credit.set("frank", 1_000);
    String order = place("frank", "book", 2);   // 2400: 1000 from the credit, 1400 by card

    HttpResponse<byte[]> first = send(post("/orders/" + order + "/payment", null, ""));
    HttpResponse<byte[]> again = send(post("/orders/" + order + "/payment", null, ""));

    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(text(first)).matches("\\{\"order\":\"" + order
        + "\",\"total\":2400,\"byStoreCredit\":1000,\"cardCharge\":\"ch_[0-9]+\"}");
    assertThat(text(again)).isEqualTo(text(first));
    assertThat(gateway.charges()).filteredOn(charge -> charge.order().equals(order))
        .singleElement().satisfies(charge -> assertThat(charge.amount()).isEqualTo(1_400));
    assertThat(credit.balance("frank")).isZero();
    assertThatKey(once, recorder, IdempotencyKey.of("orders.payment", order))
        .ranOnce().wasReplayed(1);
  }

  @Test
  void anUnknownOrderIs404() throws Exception {
    assertThat(send(post("/orders/ord_missing/payment", null, "")).statusCode()).isEqualTo(404);
  }

  /** Places an order over HTTP and returns its id. */
  private String place(String customer, String sku, int quantity) throws Exception {
    HttpResponse<byte[]> placed = send(post("/orders", "pay-" + customer,
        "{\"customer\":\"" + customer + "\",\"sku\":\"" + sku + "\",\"quantity\":" + quantity
            + "}"));
    assertThat(placed.statusCode()).isEqualTo(201);
    return placed.headers().firstValue("Location").orElseThrow().substring("/orders/".length());
  }
}
