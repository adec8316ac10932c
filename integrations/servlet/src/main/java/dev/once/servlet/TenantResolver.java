package dev.once.servlet;

import dev.once.http.Tenants;
import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.Objects;

/**
 * Tells whose request it is, so that one client's idempotency key can never replay another
 * client's response: the answer becomes the tenant of the {@link dev.once.IdempotencyKey}, and two
 * tenants never share a record.
 *
 * <p>Return {@code ""} for one shared tenant, or {@code null} when the caller cannot be identified:
 * the filter then refuses the request (403, problem type {@link dev.once.http.IdempotencyProblem#TENANT_UNKNOWN})
 * rather than file it under a tenant that other anonymous callers would share.
 *
 * <p>The filter stores a returned identity as it is when it is 1–128 visible ASCII characters
 * (and does not start with {@code ~}); any other identity is stored as {@code ~} followed by its
 * SHA-256 digest, so an identity can never be forged into another one's tenant.
 */
@FunctionalInterface
public interface TenantResolver {

  /**
   * The caller's identity: {@code ""} for a shared tenant, {@code null} when unknown (refused).
   */
  String resolve(HttpServletRequest request);

  /** Every caller in one shared tenant: only for single-client services. The default. */
  static TenantResolver none() {
    return request -> "";
  }

  /**
   * The authenticated principal's name ({@link HttpServletRequest#getUserPrincipal()}); a request
   * without a principal is refused. Put the filter after the authentication filter.
   */
  static TenantResolver principal() {
    return request -> {
      Principal principal = request.getUserPrincipal();
      return principal == null ? null : principal.getName();
    };
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
    return request -> {
      String value = request.getHeader(headerName);
      return value == null || value.isEmpty() ? null : Tenants.digest(value);
    };
  }
}
