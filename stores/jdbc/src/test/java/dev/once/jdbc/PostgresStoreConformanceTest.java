package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/** The whole conformance suite against PostgreSQL (see {@link Databases.Postgres}). */
@Tag("postgres")
class PostgresStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Postgres.STORE;
  }
}
