package dev.once;

/**
 * The business logic Once runs at most once per key (in effect). It may throw its own checked
 * exception {@code X}, which passes through Once unchanged.
 *
 * @param <T> the result type
 * @param <X> the checked exception the logic may throw
 */
@FunctionalInterface
public interface Work<T, X extends Exception> {
  T run(Attempt attempt) throws X;
}
