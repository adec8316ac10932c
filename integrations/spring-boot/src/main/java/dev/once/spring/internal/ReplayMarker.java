package dev.once.spring.internal;

import dev.once.servlet.IdempotencyFilter;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.util.ClassUtils;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * Marks the HTTP response of the current request, if there is one, as a replay
 * ({@code Idempotent-Replayed: true}), as the servlet filter marks its replays: an
 * {@code @Idempotent} method called while a controller answers a request, whose value was
 * replayed. A {@code ResponseEntity} return value carries the header itself ({@link
 * HttpEntityCodec}). Without spring-web, outside a request, or under the filter (whose own key
 * decides what a replay is), nothing happens.
 */
final class ReplayMarker {

  private static final boolean WEB = ClassUtils.isPresent(
      "org.springframework.web.context.request.RequestContextHolder",
      ReplayMarker.class.getClassLoader())
      && ClassUtils.isPresent("jakarta.servlet.http.HttpServletResponse",
          ReplayMarker.class.getClassLoader());

  private ReplayMarker() {}

  static void markCurrentResponse() {
    if (WEB) {
      Servlet.mark();
    }
  }

  /** Loaded only when spring-web and the servlet API are present. */
  private static final class Servlet {
    static void mark() {
      RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
      if (attributes instanceof ServletRequestAttributes servlet
          // Under the Idempotency-Key filter the request's own key decides what a replay is:
          // the filter marks its replays, and a first run stays unmarked.
          && servlet.getRequest().getAttribute(IdempotencyFilter.ATTEMPT_ATTRIBUTE) == null) {
        HttpServletResponse response = servlet.getResponse();
        if (response != null && !response.isCommitted()) {
          response.setHeader(IdempotencyFilter.REPLAYED_HEADER, "true");
        }
      }
    }
  }
}
