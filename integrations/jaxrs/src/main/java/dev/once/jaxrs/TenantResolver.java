package dev.once.jaxrs;

import dev.once.http.Tenants;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.SecurityContext;
import java.security.Principal;
import java.util.Objects;

/**
 * Tells whose request it is, so that one client's idempotency key can never replay another
 * client's response: the answer becomes the tenant of the {@link dev.once.IdempotencyKey}, and two
 * tenants never share a record. The same rules as the servlet filter's resolver: {@code ""} for one
 * shared tenant, {@code null} when the caller cannot be identified (refused with 403,
 * {@code idempotency-tenant-unknown}); an identity of 1–128 visible ASCII characters not starting
 * with {@code ~} is stored as it is, any other as {@code ~} and its SHA-256 digest.
 */
@FunctionalInterface
public interface TenantResolver {

  /** The caller's identity: {@code ""} for a shared tenant, {@code null} when unknown. */
  String resolve(ContainerRequestContext request);

  /** Every caller in one shared tenant: only for single-client services. The default. */
  static TenantResolver none() {
    return request -> "";
  }

  /**
   * The authenticated principal's name ({@link SecurityContext#getUserPrincipal()}); a request
   * without one is refused. Register the feature's filter after your authentication filter (its
   * priority is {@link IdempotencyFeature#PRIORITY}).
   */
  static TenantResolver principal() {
    return request -> {
      SecurityContext security = request.getSecurityContext();
      Principal principal = security == null ? null : security.getUserPrincipal();
      return principal == null ? null : principal.getName();
    };
  }

  /**
   * The value of an API-key header such as {@code X-Api-Key}; a request without it is refused.
   * Only the SHA-256 digest of the value is stored, never the secret itself.
   */
  static TenantResolver header(String headerName) {
    Objects.requireNonNull(headerName, "headerName");
    if (headerName.isBlank()) {
      throw new IllegalArgumentException("headerName must not be blank");
    }
    return request -> {
      String value = request.getHeaderString(headerName);
      return value == null || value.isEmpty() ? null : Tenants.digest(value);
    };
  }
}
