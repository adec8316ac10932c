package dev.once.spring.internal;

import dev.once.OnceException;
import dev.once.ReplayedFailureException;
import dev.once.servlet.IdempotencyProblem;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Constructor;
import java.lang.reflect.Modifier;
import java.util.function.Supplier;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.HandlerMapping;
import org.springframework.web.servlet.ModelAndView;

/**
 * Replays a terminal failure as the application answered it: the stored failure's exception is
 * made again and handed to Spring MVC's resolvers for the same handler. A controller's
 * {@code @ExceptionHandler} (or an exception's {@code @ResponseStatus}) so answers the retry as it
 * answered the original, marked replayed, instead of a generic 500; the method does not run again,
 * and its compensations ran when the failure was stored. Not API.
 */
public final class FailureReplay {

  private FailureReplay() {}

  /**
   * True when the application's resolvers answered the replayed failure into {@code response}.
   * False (nothing written) when the exception cannot be made again or nothing resolves it.
   */
  public static boolean answered(ReplayedFailureException e, HttpServletRequest request,
      HttpServletResponse response, Supplier<HandlerExceptionResolver> resolvers) {
    Object handler = request.getAttribute(HandlerMapping.BEST_MATCHING_HANDLER_ATTRIBUTE);
    if (handler instanceof HandlerMethod method && method.getBean() instanceof String) {
      // The mapping keeps the bean's name; the dispatcher ran the bean itself.
      handler = method.createWithResolvedBean();
    }
    HandlerExceptionResolver resolver = resolvers == null ? null : resolvers.get();
    Exception original = remade(e, request.getServletContext().getClassLoader());
    if (handler == null || resolver == null || original == null || response.isCommitted()) {
      return false;
    }
    response.setHeader(IdempotencyProblem.REPLAYED_HEADER, "true");
    ModelAndView answer;
    try {
      answer = resolver.resolveException(request, response, handler, original);
    } catch (RuntimeException unresolvable) {
      return false;
    }
    // An empty ModelAndView: the resolver wrote the answer (a body, or sendError) itself.
    return answer != null && answer.isEmpty();
  }

  /**
   * The stored failure's exception made again with its message, or null: only the application's
   * own exceptions (never Once's, which would answer themselves again), only those with a
   * {@code (String)} constructor.
   */
  static Exception remade(ReplayedFailureException e, ClassLoader loader) {
    String type = e.failureType();
    if (type == null) {
      return null;
    }
    try {
      Class<?> c = Class.forName(type, false,
          loader != null ? loader : Thread.currentThread().getContextClassLoader());
      if (!Exception.class.isAssignableFrom(c) || OnceException.class.isAssignableFrom(c)
          || Modifier.isAbstract(c.getModifiers())) {
        return null;
      }
      Constructor<?> constructor = c.getDeclaredConstructor(String.class);
      constructor.setAccessible(true);
      return (Exception) constructor.newInstance(e.failureMessage());
    } catch (ReflectiveOperationException | RuntimeException | LinkageError notRemade) {
      return null;
    }
  }
}
