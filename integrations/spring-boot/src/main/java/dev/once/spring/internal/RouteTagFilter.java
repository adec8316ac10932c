package dev.once.spring.internal;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.filter.ServerHttpObservationFilter;
import org.springframework.web.servlet.HandlerMapping;

/**
 * Gives the requests the Idempotency-Key filter answers itself (replays, 409, 422, 503) their
 * route in {@code http.server.requests}: they never reach Spring MVC, which is what tags a
 * request with its route, so they were {@code uri=UNKNOWN}. Sits just outside the filter; after
 * the chain, a request whose observation has no route yet is matched against the handler
 * mappings, which set it. Not API.
 */
public final class RouteTagFilter extends OncePerRequestFilter {

  private final ObjectProvider<HandlerMapping> mappings;

  public RouteTagFilter(ObjectProvider<HandlerMapping> mappings) {
    this.mappings = mappings;
  }

  @Override
  protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response,
      FilterChain chain) throws ServletException, IOException {
    chain.doFilter(request, response);
    ServerHttpObservationFilter.findObservationContext(request).ifPresent(context -> {
      if (context.getPathPattern() != null) {
        return; // dispatched to a handler, which tagged it
      }
      List<HandlerMapping> ordered = mappings.orderedStream().toList();
      for (HandlerMapping mapping : ordered) {
        try {
          if (mapping.getHandler(request) != null) {
            Object pattern = request.getAttribute(HandlerMapping.BEST_MATCHING_PATTERN_ATTRIBUTE);
            if (context.getPathPattern() == null && pattern != null) {
              context.setPathPattern(pattern.toString());
            }
            return;
          }
        } catch (Exception e) {
          // No route for it: it stays untagged, as Spring MVC would leave it.
        }
      }
    });
  }
}
