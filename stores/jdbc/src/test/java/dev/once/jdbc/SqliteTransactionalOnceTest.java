package dev.once.jdbc;

import java.util.List;
import org.junit.jupiter.api.Tag;

/**
 * Transactional mode against SQLite (see {@link Databases.Sqlite}). SQLite serialises writers, so
 * the lock-wait and killed-backend tests of {@link ServerTransactionalOnceContract} do not apply;
 * fewer threads race, as they only queue for the one write lock.
 */
@Tag("sqlite")
class SqliteTransactionalOnceTest extends TransactionalOnceContract {

  @Override
  JdbcDialect dialect() {
    return JdbcDialect.SQLITE;
  }

  /** The transaction is explicit: BEGIN IMMEDIATE … COMMIT, the connection stays in autocommit. */
  @Override
  List<String> happyPath() {
    return List.of("execute", "executeUpdate", "executeUpdate", "execute");
  }

  @Override
  List<String> replayPath() {
    return List.of("execute", "executeUpdate", "executeQuery", "execute");
  }

  @Override
  int walletThreads() {
    return 4;
  }
}
