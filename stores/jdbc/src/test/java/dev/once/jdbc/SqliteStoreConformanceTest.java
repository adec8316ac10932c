package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/** The whole conformance suite against SQLite (see {@link Databases.Sqlite}). */
@Tag("sqlite")
class SqliteStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Sqlite.STORE;
  }
}
