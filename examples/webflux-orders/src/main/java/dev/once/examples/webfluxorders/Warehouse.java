package dev.once.examples.webfluxorders;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;

/**
 * Stands in for the warehouse's API, which takes no idempotency key: every call is another pick
 * list, so a second call for one order would ship it twice. Only the filter keeps it to one.
 */
@Component
public class Warehouse {

  private final List<String> picks = new CopyOnWriteArrayList<>();

  /** Asks the warehouse to pick and ship {@code order}. */
  public Mono<Void> pick(Order order) {
    return Mono.fromRunnable(() -> picks.add(order.id()));
  }

  /** The orders picked so far, one entry per call. */
  public List<String> picks() {
    return List.copyOf(picks);
  }
}
