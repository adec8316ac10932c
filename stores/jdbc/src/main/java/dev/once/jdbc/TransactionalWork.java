package dev.once.jdbc;

/**
 * Business logic run by {@link TransactionalOnce} inside the transaction that also claims the key
 * and stores the outcome. Its own checked exception {@code X} passes through unchanged.
 *
 * @param <T> the result type
 * @param <X> the checked exception the logic may throw
 */
@FunctionalInterface
public interface TransactionalWork<T, X extends Exception> {

  /** Runs the logic on {@link Transaction#connection()}; returns the value to store and replay. */
  T run(Transaction tx) throws X;
}
