package dev.once.examples.webfluxorders;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;

/** Stands in for a card payment gateway: every call is a charge (counted, never deduplicated). */
@Component
public class CardGateway {

  private final List<CardCharge> charges = new CopyOnWriteArrayList<>();
  private final AtomicInteger ids = new AtomicInteger();

  public Mono<CardCharge> charge(String order, long amount) {
    return Mono.fromSupplier(() -> {
      CardCharge charge = new CardCharge("ch_" + ids.incrementAndGet(), order, amount);
      charges.add(charge);
      return charge;
    });
  }

  /** Every charge made, in order. */
  public List<CardCharge> charges() {
    return List.copyOf(charges);
  }
}
