package dev.once.examples.payments;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.jackson.JsonCodec;
import dev.once.testkit.OnceExtension;
import dev.once.testkit.OnceRecorder;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The order saga alone, with the testing kit (docs/testing.md): an in-memory store, a recorder
 * and the application's own Once setup ({@link OnceSetup}); the stock and the wallet stand-ins
 * write what they do into {@link #effects}.
 */
@ExtendWith(OnceExtension.class)
class CheckoutTest {

  private final List<String> effects = new CopyOnWriteArrayList<>();
  private final Courier courier = new Courier();
  private final Mailer mailer = new Mailer();
  private final Checkout checkout = new Checkout(new Inventory() {
    @Override
    public String reserve(String sku, int quantity, String reference) {
      effects.add("reserve " + quantity + " " + sku);
      return "rsv-1";
    }

    @Override
    public void release(String reservation) {
      effects.add("release " + reservation);
    }
  }, new Payments() {
    @Override
    public Charge charge(String paymentKey, ChargeRequest request) {
      if (request.amount() > 10_000) {
        throw new InsufficientFundsException(request.wallet(), request.amount());
      }
      effects.add("charge " + request.amount());
      return new Charge("ch-1", request.wallet(), request.amount(), 10_000 - request.amount());
    }

    @Override
    public void refund(String refundKey, Charge charge) {
      effects.add("refund " + charge.id());
    }
  }, courier, mailer);

  @Test
  void aRetryDoesNotRepeatTheStepsDone(Once base, OnceRecorder recorder) {
    Once once = withTheApplicationsSetup(base);
    Order order = new Order("olga", "book", 2, 3_000, "1 Main St", "olga@example.com");
    mailer.downFor(1);

    assertThatThrownBy(() -> place(once, "o-1", order))
        .isInstanceOf(IllegalStateException.class);                 // the mail failed: retryable
    OrderReceipt retried = place(once, "o-1", order);
    OrderReceipt replayed = place(once, "o-1", order);

    assertThat(replayed).isEqualTo(retried);
    assertThat(retried).isEqualTo(new OrderReceipt("rsv-1", "ch-1", "trk_1"));
    assertThat(effects).containsExactly("reserve 2 book", "charge 3000");
    assertThat(courier.bookings()).containsExactly("1 Main St");
    assertThat(mailer.sent()).hasSize(1);
    assertThatKey(once, recorder, IdempotencyKey.of("orders", "o-1"))
        .ran(2).succeeded().wasReplayed(1);
  }

  @Test
  void anOrderNoCourierDeliversUndoesTheChargeThenTheReservation(Once base,
      OnceRecorder recorder) {
    Once once = withTheApplicationsSetup(base);
    Order order = new Order("pia", "lamp", 1, 4_000, "Nowhere Lane 1", "pia@example.com");

    assertThatThrownBy(() -> place(once, "o-2", order))
        .isInstanceOf(UndeliverableException.class);
    assertThatThrownBy(() -> place(once, "o-2", order))
        .isInstanceOf(ReplayedFailureException.class);             // a retry: the same failure

    assertThat(effects).containsExactly("reserve 1 lamp", "charge 4000", "refund ch-1",
        "release rsv-1");
    assertThat(mailer.sent()).isEmpty();
    assertThatKey(once, recorder, IdempotencyKey.of("orders", "o-2"))
        .ranOnce().failedFor(UndeliverableException.class).compensated("charge", "reserve")
        .wasReplayed(1);
  }

  @Test
  void anOrderTheWalletCannotPayReleasesTheStock(Once base, OnceRecorder recorder) {
    Once once = withTheApplicationsSetup(base);
    Order order = new Order("sam", "desk", 1, 50_000, "3 High St", "sam@example.com");

    assertThatThrownBy(() -> place(once, "o-3", order))
        .isInstanceOf(InsufficientFundsException.class);

    assertThat(effects).containsExactly("reserve 1 desk", "release rsv-1");
    assertThat(courier.bookings()).isEmpty();
    assertThatKey(once, recorder, IdempotencyKey.of("orders", "o-3"))
        .ranOnce().failedFor(InsufficientFundsException.class).compensated("reserve");
  }

  /** The kit's Once, with what the application's OnceBuilderCustomizer adds to the starter's. */
  private Once withTheApplicationsSetup(Once base) {
    Once.Builder builder = base.toBuilder();
    new OnceSetup().failuresAndSteps(checkout).customize(builder);
    return builder.build();
  }

  private OrderReceipt place(Once once, String key, Order order) {
    return once.execute(IdempotencyKey.of("orders", key), Fingerprint.of(order.toString()),
        JsonCodec.of(OrderReceipt.class), attempt -> checkout.place(attempt, order));
  }
}
