package dev.once.jdbc;

import dev.once.jdbc.internal.ClaimOrder;
import java.util.List;
import javax.sql.DataSource;

/**
 * Transactional mode against PostgreSQL with every call reading the key before it begins a
 * transaction: the order {@code call} takes while most of its calls meet committed records
 * ({@code ClaimOrder}). Every test of {@link PostgresTransactionalOnceTest} again, lock waits
 * and killed backends included.
 */
class PostgresReadFirstTransactionalOnceTest extends PostgresTransactionalOnceTest {

  @Override
  JdbcStore store() {
    return Databases.Postgres.READ_FIRST_STORE;
  }

  @Override
  JdbcStore.Builder storeOn(DataSource dataSource) {
    return super.storeOn(dataSource).claimOrder(ClaimOrder.fixed(true));
  }

  /** The read finds no record; then the transaction as insert-first runs it. */
  @Override
  List<String> happyPath() {
    return List.of("executeQuery", "setAutoCommit(false)", "execute", "execute",
        "setAutoCommit(true)");
  }

  /** One read in autocommit answers: no transaction begun, nothing rolled back. */
  @Override
  List<String> replayPath() {
    return List.of("executeQuery");
  }
}
