package dev.once.jdbc;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/**
 * The whole conformance suite against PostgreSQL (see {@link Databases.Postgres}); a batch claim that
 * fails part-way meets a trigger raising for one key ({@link Poison}).
 */
@Tag("postgres")
class PostgresStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Postgres.STORE;
  }

  @Override
  protected boolean poison(IdempotencyKey key) {
    Poison.inject(Databases.Postgres.STORE, key);
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    Poison.heal(Databases.Postgres.STORE, key);
  }
}
