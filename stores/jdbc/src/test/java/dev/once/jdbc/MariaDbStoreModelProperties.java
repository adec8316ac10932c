package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;
import net.jqwik.api.Tag;

/** The model-based property test against MariaDB (see {@link Databases.MariaDb}). */
@Tag("mariadb")
class MariaDbStoreModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.MariaDb.STORE;
  }
}
