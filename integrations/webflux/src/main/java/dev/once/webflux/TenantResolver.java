package dev.once.webflux;

import dev.once.http.Tenants;
import java.util.Objects;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Tells whose request it is, so that one client's idempotency key can never replay another
 * client's response: the answer becomes the tenant of the {@link dev.once.IdempotencyKey}, and two
 * tenants never share a record. The reactive counterpart of {@code dev.once.servlet.TenantResolver},
 * with the same three stock resolvers and the same rules.
 *
 * <p>Answer {@code ""} for one shared tenant, or an empty {@link Mono} when the caller cannot be
 * identified: the filter then refuses the request (403, problem type
 * {@link dev.once.http.IdempotencyProblem#TENANT_UNKNOWN}) rather than file it under a tenant that
 * other anonymous callers would share. Do not block in it: it runs on the server's event loop.
 *
 * <p>The filter stores an identity as it is when it is 1–128 visible ASCII characters (and does
 * not start with {@code ~}); any other identity is stored as {@code ~} followed by its SHA-256
 * digest, so an identity can never be forged into another one's tenant.
 */
@FunctionalInterface
public interface TenantResolver {

  /** The caller's identity: {@code ""} for a shared tenant, empty when unknown (refused). */
  Mono<String> resolve(ServerWebExchange exchange);

  /** Every caller in one shared tenant: only for single-client services. The default. */
  static TenantResolver none() {
    return exchange -> Mono.just("");
  }

  /**
   * The authenticated principal's name ({@link ServerWebExchange#getPrincipal()}); a request
   * without a principal is refused. Order the filter after the authentication (Spring Security's
   * {@code WebFilterChainProxy} runs at -100; the starter's default order is 0).
   */
  static TenantResolver principal() {
    return exchange -> exchange.getPrincipal().map(principal -> principal.getName());
  }

  /**
   * The value of an API-key header such as {@code X-Api-Key}; a request without it is refused. Only
   * the SHA-256 digest of the value is stored, never the secret itself.
   */
  static TenantResolver header(String headerName) {
    Objects.requireNonNull(headerName, "headerName");
    if (headerName.isBlank()) {
      throw new IllegalArgumentException("headerName must not be blank");
    }
    return exchange -> {
      String value = exchange.getRequest().getHeaders().getFirst(headerName);
      return value == null || value.isEmpty() ? Mono.empty() : Mono.just(Tenants.digest(value));
    };
  }
}
