package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;
import net.jqwik.api.Tag;

/** The model-based property test against PostgreSQL, every claim reading before it inserts. */
@Tag("postgres")
class PostgresReadFirstModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Postgres.READ_FIRST_STORE;
  }
}
