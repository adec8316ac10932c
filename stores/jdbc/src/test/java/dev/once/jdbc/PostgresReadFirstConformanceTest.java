package dev.once.jdbc;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/**
 * The whole conformance suite against PostgreSQL with every claim reading before it inserts: the
 * order a store takes while most of its claims meet existing keys ({@code ClaimOrder}).
 */
@Tag("postgres")
class PostgresReadFirstConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Postgres.READ_FIRST_STORE;
  }

  @Override
  protected boolean poison(IdempotencyKey key) {
    Poison.inject(Databases.Postgres.READ_FIRST_STORE, key);
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    Poison.heal(Databases.Postgres.READ_FIRST_STORE, key);
  }
}
