package dev.once.testkit.http;

import dev.once.Once;
import java.util.List;
import java.util.Objects;

/**
 * One protected route of the server under {@link HttpIdempotencyContract}: the adapter built over
 * {@code once} with these settings, protecting {@code paths} (POST and PATCH). Settings left
 * {@code null} are the adapter's defaults.
 *
 * @param paths             the path pattern protected, e.g. {@code /api/**}
 * @param excludePaths      patterns left unprotected
 * @param once              the {@code Once} requests run through
 * @param scope             the scope, or null for the default ({@code http})
 * @param tenant            who the caller is
 * @param storeServerErrors whether 5xx answers are stored
 * @param maxRequestBytes   the request body bound, or null for the default
 * @param maxResponseBytes  the response body bound, or null for the default
 * @param keyRequired       whether a key-less request is refused
 */
public record Route(String paths, List<String> excludePaths, Once once, String scope,
    Tenant tenant, boolean storeServerErrors, Integer maxRequestBytes, Integer maxResponseBytes,
    boolean keyRequired) {

  /** How the route's adapter resolves the tenant. */
  public enum Tenant {
    /** One shared tenant (the default resolver). */
    SHARED,
    /**
     * The authenticated principal's name; the test's authentication (before the adapter) makes
     * the {@code X-User} header the principal.
     */
    PRINCIPAL,
    /** The {@code X-Api-Key} header, stored only as its digest. */
    API_KEY
  }

  /** Checks the required parts. */
  public Route {
    Objects.requireNonNull(paths, "paths");
    excludePaths = List.copyOf(excludePaths);
    Objects.requireNonNull(once, "once");
    Objects.requireNonNull(tenant, "tenant");
  }

  /** {@code paths} over {@code once}, every other setting the default. */
  public static Route of(String paths, Once once) {
    return new Route(paths, List.of(), once, null, Tenant.SHARED, false, null, null, true);
  }

  Route excluding(String pattern) {
    return new Route(paths, List.of(pattern), once, scope, tenant, storeServerErrors,
        maxRequestBytes, maxResponseBytes, keyRequired);
  }

  Route scope(String name) {
    return new Route(paths, excludePaths, once, name, tenant, storeServerErrors, maxRequestBytes,
        maxResponseBytes, keyRequired);
  }

  Route tenant(Tenant t) {
    return new Route(paths, excludePaths, once, scope, t, storeServerErrors, maxRequestBytes,
        maxResponseBytes, keyRequired);
  }

  Route storingServerErrors() {
    return new Route(paths, excludePaths, once, scope, tenant, true, maxRequestBytes,
        maxResponseBytes, keyRequired);
  }

  Route maxRequestBytes(int bytes) {
    return new Route(paths, excludePaths, once, scope, tenant, storeServerErrors, bytes,
        maxResponseBytes, keyRequired);
  }

  Route maxResponseBytes(int bytes) {
    return new Route(paths, excludePaths, once, scope, tenant, storeServerErrors,
        maxRequestBytes, bytes, keyRequired);
  }

  Route keyOptional() {
    return new Route(paths, excludePaths, once, scope, tenant, storeServerErrors,
        maxRequestBytes, maxResponseBytes, false);
  }
}
