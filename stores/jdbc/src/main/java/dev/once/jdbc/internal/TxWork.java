package dev.once.jdbc.internal;

import dev.once.IdempotencyKey;
import java.sql.Connection;

/**
 * The logic {@link TransactionalEngine} runs once it holds the claim, on the transaction's
 * connection under {@code token}. {@code TransactionalOnce} adapts the user's
 * {@code TransactionalWork} to it, so this package does not depend back on the public one.
 */
@FunctionalInterface
public interface TxWork<T, X extends Exception> {
  T run(Connection connection, IdempotencyKey key, long token) throws X;
}
