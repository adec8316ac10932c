package dev.once.examples.webfluxorders;

import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/**
 * The orders table. Blocking JDBC: the controller calls it on {@code Schedulers.boundedElastic()},
 * never on an event loop.
 */
@Component
public class Orders {

  /** Prices in cents. */
  static final Map<String, Long> CATALOG = Map.of("book", 1200L, "lamp", 4500L, "pen", 150L);

  private final JdbcClient jdbc;

  public Orders(JdbcClient jdbc) {
    this.jdbc = jdbc;
  }

  /**
   * Inserts the order of {@code requestKey} (the attempt's downstream key) unless it exists, and
   * returns it: a second run for one key finds the first run's order instead of adding another.
   */
  public Order place(String requestKey, OrderRequest request) {
    long total = CATALOG.get(request.sku()) * request.quantity();
    jdbc.sql("INSERT INTO orders (id, request_key, customer, sku, quantity, total)"
            + " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (request_key) DO NOTHING")
        .params("ord_" + UUID.randomUUID().toString().substring(0, 8), requestKey,
            request.customer(), request.sku(), request.quantity(), total)
        .update();
    return jdbc.sql("SELECT id, customer, sku, quantity, total FROM orders WHERE request_key = ?")
        .param(requestKey).query(Order.class).single();
  }

  public Optional<Order> find(String id) {
    return jdbc.sql("SELECT id, customer, sku, quantity, total FROM orders WHERE id = ?")
        .param(id).query(Order.class).optional();
  }

  public long count() {
    return jdbc.sql("SELECT count(*) FROM orders").query(Long.class).single();
  }
}
