package dev.once;

/**
 * Business logic run only for its effect; see {@link Once#run}.
 *
 * @param <X> the checked exception the logic may throw
 */
@FunctionalInterface
public interface Action<X extends Exception> {
  void run(Attempt attempt) throws X;
}
