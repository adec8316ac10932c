package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/** The whole conformance suite against MariaDB (see {@link Databases.MariaDb}). */
@Tag("mariadb")
class MariaDbStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.MariaDb.STORE;
  }
}
