package dev.once.examples.jerseyorders;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Stands in for the warehouse's API, which takes no idempotency key: every call is another pick
 * list, so a second call for one order would ship it twice. Only the feature keeps it to one.
 */
public final class Warehouse {

  private final List<String> picks = new CopyOnWriteArrayList<>();

  /** Asks the warehouse to pick and ship {@code order}. */
  public void pick(Order order) {
    picks.add(order.id());
  }

  /** The orders picked so far, one entry per call. */
  public List<String> picks() {
    return List.copyOf(picks);
  }
}
