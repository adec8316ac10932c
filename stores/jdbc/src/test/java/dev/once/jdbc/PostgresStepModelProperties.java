package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StepModelProperties;
import org.junit.jupiter.api.Tag;

/** Durable steps under dying and frozen workers, against PostgreSQL (see {@link Databases.Postgres}). */
@Tag("postgres")
class PostgresStepModelProperties extends StepModelProperties {
  @Override
  protected IdempotencyStore newStore() {
    return Databases.Postgres.STORE;
  }
}
