package dev.once.jaxrs;

import dev.once.Once;
import dev.once.http.PathPatterns;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/** One feature's settings, derived once: what it protects and how. */
record Protection(Once once, Set<String> methods, PathPatterns paths, PathPatterns excludedPaths,
    String scope, TenantResolver tenantResolver, String keyHeader, boolean keyRequired,
    List<String> replayHeaders, Set<String> neverStored, boolean storeServerErrors,
    int maxRequestBytes, int maxResponseBytes, Duration retryAfter, Duration abandonAfter) {

  boolean protects(String method, String path) {
    return methods.contains(method) && paths.matches(path) && !excludedPaths.matches(path);
  }
}
