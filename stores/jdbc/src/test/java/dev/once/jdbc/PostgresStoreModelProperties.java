package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;
import net.jqwik.api.Tag;

/** The model-based property test against PostgreSQL (see {@link Databases.Postgres}). */
@Tag("postgres")
class PostgresStoreModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Postgres.STORE;
  }
}
