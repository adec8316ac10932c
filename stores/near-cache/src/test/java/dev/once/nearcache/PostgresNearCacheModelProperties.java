package dev.once.nearcache;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;

/** The model-based property test against a near cache in front of the Postgres store. */
class PostgresNearCacheModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return NearCacheStore.wrap(Servers.Postgres.STORE).build();
  }
}
