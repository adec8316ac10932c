package dev.once.nearcache;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;

/**
 * The whole conformance suite against a near cache in front of PostgreSQL; a batch claim that
 * fails part-way meets a trigger raising for one key.
 */
class PostgresNearCacheConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return NearCacheStore.wrap(Servers.Postgres.STORE).build();
  }

  @Override
  protected boolean poison(IdempotencyKey key) {
    Servers.Postgres.poison(key);
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    Servers.Postgres.heal(key);
  }
}
