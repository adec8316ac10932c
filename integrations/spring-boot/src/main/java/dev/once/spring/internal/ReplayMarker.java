package dev.once.spring.internal;

import dev.once.servlet.IdempotencyFilter;
import dev.once.http.IdempotencyProblem;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Method;
import java.util.Arrays;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.util.ClassUtils;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.method.HandlerMethod;

/**
 * Marks a replayed answer as the servlet filter marks its replays ({@code Idempotent-Replayed:
 * true}), when the {@code @Idempotent} method is the handler of the request being answered: a
 * {@code ResponseEntity} or {@code HttpEntity} gets the header, any other value the response. A
 * replayed call of a service method a controller makes is not the replay of the request (the
 * controller may go on and make a new answer), and under the filter the request's own key
 * decides what a replay is: neither is marked. Without Spring MVC, or outside a request, nothing
 * happens.
 */
final class ReplayMarker {

  private static final ClassLoader LOADER = ReplayMarker.class.getClassLoader();
  private static final boolean MVC =
      ClassUtils.isPresent("org.springframework.web.method.HandlerMethod", LOADER)
          && ClassUtils.isPresent("jakarta.servlet.http.HttpServletResponse", LOADER);
  /** Spring MVC's {@code HandlerMapping.BEST_MATCHING_HANDLER_ATTRIBUTE} (spring-webmvc). */
  private static final String HANDLER_ATTRIBUTE =
      "org.springframework.web.servlet.HandlerMapping.bestMatchingHandler";

  private ReplayMarker() {}

  /** {@code value}, marked as a replay if it answers the current request (see above). */
  static Object marked(Object value, Method invoked) {
    return MVC ? Mvc.marked(value, invoked) : value;
  }

  /** Loaded only when Spring MVC and the servlet API are present. */
  private static final class Mvc {
    static Object marked(Object value, Method invoked) {
      RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
      if (!(attributes instanceof ServletRequestAttributes servlet)) {
        return value;
      }
      HttpServletRequest request = servlet.getRequest();
      if (request.getAttribute(IdempotencyFilter.ATTEMPT_ATTRIBUTE) != null
          || !(request.getAttribute(HANDLER_ATTRIBUTE)
              instanceof HandlerMethod handler)
          || !sameMethod(handler.getMethod(), invoked)) {
        return value;
      }
      if (value instanceof HttpEntity<?> entity) {
        HttpHeaders headers = new HttpHeaders();
        headers.putAll(entity.getHeaders());
        headers.set(IdempotencyProblem.REPLAYED_HEADER, "true");
        return entity instanceof ResponseEntity<?> response
            ? ResponseEntity.status(response.getStatusCode()).headers(headers)
                .body(response.getBody())
            : new HttpEntity<>(entity.getBody(), headers);
      }
      HttpServletResponse response = servlet.getResponse();
      if (response != null && !response.isCommitted()) {
        response.setHeader(IdempotencyProblem.REPLAYED_HEADER, "true");
      }
      return value;
    }

    private static boolean sameMethod(Method handler, Method invoked) {
      return handler.getName().equals(invoked.getName())
          && Arrays.equals(handler.getParameterTypes(), invoked.getParameterTypes())
          && (handler.getDeclaringClass().isAssignableFrom(invoked.getDeclaringClass())
              || invoked.getDeclaringClass().isAssignableFrom(handler.getDeclaringClass()));
    }
  }
}
