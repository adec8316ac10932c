package dev.once.webflux;

import java.security.Principal;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Stands in for an authentication filter: the {@code X-User} header becomes the principal, and
 * the caller is written to the Reactor Context under {@link #CONTEXT_KEY}, as Spring Security
 * writes its security context.
 */
final class TestAuthFilter implements WebFilter {

  /** Where the caller is in the Reactor Context. */
  static final String CONTEXT_KEY = "test.user";

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    String user = exchange.getRequest().getHeaders().getFirst("X-User");
    if (user == null) {
      return chain.filter(exchange);
    }
    Principal principal = () -> user;
    return chain.filter(exchange.mutate().principal(Mono.just(principal)).build())
        .contextWrite(context -> context.put(CONTEXT_KEY, user));
  }
}
