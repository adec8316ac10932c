package dev.once.jdbc;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/**
 * The whole conformance suite against SQLite (see {@link Databases.Sqlite}); a batch claim that
 * fails part-way meets a trigger raising for one key ({@link Poison}).
 */
@Tag("sqlite")
class SqliteStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.Sqlite.STORE;
  }

  @Override
  protected boolean poison(IdempotencyKey key) {
    Poison.inject(Databases.Sqlite.STORE, key);
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    Poison.heal(Databases.Sqlite.STORE, key);
  }
}
