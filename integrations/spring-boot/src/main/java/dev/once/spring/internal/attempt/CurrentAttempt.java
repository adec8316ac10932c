package dev.once.spring.internal.attempt;

import dev.once.Attempt;
import java.util.concurrent.Callable;

/**
 * The attempt behind {@link dev.once.spring.IdempotentAttempt#current()}: one per thread. In a
 * package of its own, which depends on nothing of the starter, so that the public
 * {@code IdempotentAttempt} reads it without the starter's API and its engine depending on each
 * other.
 */
public final class CurrentAttempt {

  private static final ThreadLocal<Attempt> CURRENT = new ThreadLocal<>();

  private CurrentAttempt() {}

  /** The attempt running on this thread, or null. */
  public static Attempt get() {
    return CURRENT.get();
  }

  /** Runs {@code body} with {@code attempt} current, restoring the outer one (nested methods). */
  public static <T> T with(Attempt attempt, Callable<T> body) throws Exception {
    Attempt outer = CURRENT.get();
    CURRENT.set(attempt);
    try {
      return body.call();
    } finally {
      if (outer == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(outer);
      }
    }
  }
}
