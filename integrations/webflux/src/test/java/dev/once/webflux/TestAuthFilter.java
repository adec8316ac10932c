package dev.once.webflux;

import java.security.Principal;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/** Stands in for an authentication filter: the {@code X-User} header becomes the principal. */
final class TestAuthFilter implements WebFilter {

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    String user = exchange.getRequest().getHeaders().getFirst("X-User");
    if (user == null) {
      return chain.filter(exchange);
    }
    Principal principal = () -> user;
    return chain.filter(exchange.mutate().principal(Mono.just(principal)).build());
  }
}
