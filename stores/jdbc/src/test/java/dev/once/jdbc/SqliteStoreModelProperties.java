package dev.once.jdbc;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;
import net.jqwik.api.Tag;

/** The model-based property test against SQLite (see {@link Databases.Sqlite}). */
@Tag("sqlite")
class SqliteStoreModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Sqlite.STORE;
  }
}
