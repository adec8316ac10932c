package dev.once.spring.internal;

import dev.once.webflux.IdempotencyWebFilter;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * The auto-configured {@link IdempotencyWebFilter} at {@code once.http.filter-order} among the
 * application's {@code WebFilter} beans (WebFlux sorts them by {@link Ordered}), as the servlet
 * filter's registration places it among the servlet filters.
 */
public final class OrderedWebFilter implements WebFilter, Ordered {

  private final IdempotencyWebFilter filter;
  private final int order;

  public OrderedWebFilter(IdempotencyWebFilter filter, int order) {
    this.filter = filter;
    this.order = order;
  }

  /** The filter placed. */
  public IdempotencyWebFilter filter() {
    return filter;
  }

  @Override
  public int getOrder() {
    return order;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    return filter.filter(exchange, chain);
  }

  @Override
  public String toString() {
    return "OrderedWebFilter[order=" + order + ", " + filter + "]";
  }
}
