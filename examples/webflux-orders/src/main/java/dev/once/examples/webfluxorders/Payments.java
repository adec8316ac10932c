package dev.once.examples.webfluxorders;

import dev.once.spring.Idempotent;
import org.springframework.stereotype.Service;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** Pays an order: store credit first, the card for the rest. */
@Service
public class Payments {

  private final StoreCredit credit;
  private final CardGateway gateway;

  public Payments(StoreCredit credit, CardGateway gateway) {
    this.credit = credit;
    this.gateway = gateway;
  }

  /**
   * Pays {@code amount} for {@code orderId}, once per order: the key is the order's id, so every
   * later call for that order (a client retrying, a second tab) gets the first call's result
   * without taking credit or charging again.
   *
   * <p>The result is the card charge, or an <b>empty</b> {@code Mono} when the store credit
   * covered the whole amount. Once stores that empty result like a value: a later call completes
   * empty too, and the credit is not taken a second time.
   *
   * <p>The starter invokes this method once the key is claimed, on the {@code Once}'s
   * {@code asyncExecutor}; the blocking credit update moves to {@code boundedElastic}.
   */
  @Idempotent(key = "#orderId", scope = "orders.payment")
  public Mono<CardCharge> pay(String orderId, String customer, long amount) {
    return Mono.fromCallable(() -> credit.take(customer, amount))
        .subscribeOn(Schedulers.boundedElastic())
        .flatMap(fromCredit -> fromCredit == amount ? Mono.<CardCharge>empty()
            : gateway.charge(orderId, amount - fromCredit));
  }
}
