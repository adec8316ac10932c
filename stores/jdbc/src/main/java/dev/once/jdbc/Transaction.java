package dev.once.jdbc;

import dev.once.IdempotencyKey;
import java.sql.Connection;

/**
 * The transaction a {@link TransactionalOnce} runs the logic in, handed to
 * {@link TransactionalWork#run}. Valid only while the logic runs.
 *
 * <p>The claim of the key, everything the logic does on {@link #connection()} and the stored outcome
 * commit together or not at all.
 */
public interface Transaction {

  /**
   * The JDBC connection inside the transaction: run the business SQL on it. Do not commit, roll
   * back, close it or change its autocommit mode: {@link TransactionalOnce} owns the transaction's
   * end (or, with {@link TransactionalOnce#callInTransaction}, the caller does).
   */
  Connection connection();

  /** The key being executed. */
  IdempotencyKey idempotencyKey();

  /**
   * A stable key to pass downstream, the same for every attempt of this key and the same as
   * {@link dev.once.Attempt#key()} in lease mode: {@code once-} followed by the 43 URL-safe base64
   * characters of SHA-256(scope NUL tenant NUL key), 48 characters in all.
   */
  String key();

  /** The fencing token of this claim, as stored in the record. */
  long token();
}
