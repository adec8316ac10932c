package dev.once.jdbc.internal;

import java.sql.SQLException;

/**
 * A conflict the store resolves by rolling back and starting the operation over: a record deleted
 * between a failed insert and the locked read, or a key inserted by a concurrent batch. Bounded
 * like deadlocks; it becomes a StoreUnavailableException if it keeps happening.
 */
final class RetryableConflict extends SQLException {
  private static final long serialVersionUID = 1L;

  RetryableConflict(String message) {
    super(message, "40001");
  }
}
