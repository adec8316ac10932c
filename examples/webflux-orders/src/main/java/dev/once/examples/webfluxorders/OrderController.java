package dev.once.examples.webfluxorders;

import dev.once.Attempt;
import dev.once.webflux.IdempotencyWebFilter;
import java.net.URI;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** {@code POST /orders}, {@code GET /orders/{id}} and {@code POST /orders/{id}/payment}. */
@RestController
public class OrderController {

  private final Orders orders;
  private final Warehouse warehouse;
  private final Payments payments;

  public OrderController(Orders orders, Warehouse warehouse, Payments payments) {
    this.orders = orders;
    this.warehouse = warehouse;
    this.payments = payments;
  }

  /**
   * Places an order and has the warehouse ship it. The Once WebFilter ({@code once.http.paths})
   * runs this at most once per {@code Idempotency-Key}: a retry gets the stored 201, body and
   * {@code Location} with {@code Idempotent-Replayed: true}, and the warehouse is called once.
   * A 400 for a bad order is an answer too: stored and replayed for its key.
   */
  @PostMapping("/orders")
  public Mono<ResponseEntity<Object>> place(@RequestBody OrderRequest request,
      ServerWebExchange exchange) {
    if (request.customer() == null || request.sku() == null || request.quantity() <= 0
        || !Orders.CATALOG.containsKey(request.sku())) {
      return Mono.just(ResponseEntity.badRequest().body(ProblemDetail.forStatusAndDetail(
          HttpStatus.BAD_REQUEST, "a customer, a quantity above 0 and a sku of "
              + Orders.CATALOG.keySet().stream().sorted().toList() + " are required")));
    }
    // The filter protects POST /orders, so the request has an attempt; its key is stable across
    // a re-run of this key, and the orders table is unique on it.
    Attempt attempt = IdempotencyWebFilter.attempt(exchange).orElseThrow();
    return Mono.fromCallable(() -> orders.place(attempt.key(), request))
        .subscribeOn(Schedulers.boundedElastic())   // JDBC blocks: never on the event loop
        .flatMap(order -> warehouse.pick(order).thenReturn(order))
        .map(order -> ResponseEntity.created(URI.create("/orders/" + order.id())).body(order));
  }

  @GetMapping("/orders/{id}")
  public Mono<ResponseEntity<Order>> get(@PathVariable String id) {
    return Mono.fromCallable(() -> orders.find(id))
        .subscribeOn(Schedulers.boundedElastic())
        .map(found -> found.map(ResponseEntity::ok)
            .orElseGet(() -> ResponseEntity.notFound().build()));
  }

  /**
   * Pays an order. Not behind the filter (it protects {@code /orders} only) and needing no
   * header: {@link Payments#pay} is {@code @Idempotent} on the order's id, so paying an order twice
   * pays it once and answers the same {@link Payment} both times.
   */
  @PostMapping("/orders/{id}/payment")
  public Mono<ResponseEntity<Payment>> pay(@PathVariable String id) {
    return Mono.fromCallable(() -> orders.find(id))
        .subscribeOn(Schedulers.boundedElastic())
        .flatMap(found -> found.map(order -> payments.pay(order.id(), order.customer(),
                    order.total())
                .map(charge -> new Payment(order.id(), order.total(),
                    order.total() - charge.amount(), charge.id()))
                // An empty Mono: the store credit covered it all (stored as empty by Once).
                .defaultIfEmpty(new Payment(order.id(), order.total(), order.total(), null))
                .map(ResponseEntity::ok))
            .orElseGet(() -> Mono.just(ResponseEntity.notFound().build())));
  }
}
