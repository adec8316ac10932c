package dev.once.examples.payments;

import dev.once.Attempt;
import dev.once.Codecs;
import dev.once.Step;
import dev.once.jackson.JsonCodec;
import org.springframework.stereotype.Service;

/**
 * The order saga: reserve the stock, charge the wallet, book the courier, mail the receipt. Each
 * is a durable step of the order's attempt: a retry (after a failure that may pass, or a takeover
 * after a crash) gets the results of the steps already done back instead of running them again,
 * so the courier is booked and the receipt mailed at most once although neither takes a key. When
 * the order fails for good (out of stock, insufficient funds, an address no courier serves), the
 * steps done are undone in reverse order, each once: the charge refunded, the stock released.
 */
@Service
public class Checkout {

  private final Inventory inventory;
  private final Payments payments;
  private final Courier courier;
  private final Mailer mailer;

  private final Step<String> reserve;
  private final Step<Charge> charge;

  public Checkout(Inventory inventory, Payments payments, Courier courier, Mailer mailer) {
    this.inventory = inventory;
    this.payments = payments;
    this.courier = courier;
    this.mailer = mailer;
    this.reserve = Step.of("reserve", Codecs.utf8())
        .compensate((reservation, compensationKey) -> inventory.release(reservation));
    this.charge = Step.of("charge", JsonCodec.of(Charge.class))
        .compensate((paid, compensationKey) -> payments.refund(compensationKey, paid));
  }

  /**
   * The steps that have a compensation. Declared on the {@code Once} ({@link OnceSetup}), so that
   * any attempt can undo them, not only one that reaches them.
   */
  public Step<?>[] compensableSteps() {
    return new Step<?>[] {reserve, charge};
  }

  /**
   * Places {@code order} as {@code attempt}'s work: call it inside {@code Once} (an
   * {@code @Idempotent} method's {@code IdempotentAttempt.current()}, or {@code once.execute}).
   */
  public OrderReceipt place(Attempt attempt, Order order) {
    String reservation = attempt.step(reserve,
        ref -> inventory.reserve(order.sku(), order.quantity(), ref));
    Charge paid = attempt.step(charge,      // the wallet deduplicates on the step's key
        ref -> payments.charge(ref, new ChargeRequest(order.wallet(), order.amount())));
    String tracking = attempt.step("ship", Codecs.utf8(),
        ref -> courier.book(order.address()));
    attempt.step("notify", Codecs.utf8(), ref -> {
      mailer.send(order.email(), "Paid " + order.amount() + " (" + paid.id() + "), tracking "
          + tracking);
      return "sent";
    });
    return new OrderReceipt(reservation, paid.id(), tracking);
  }
}
