package dev.once.jdbc;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import org.junit.jupiter.api.Tag;

/**
 * The whole conformance suite against MariaDB (see {@link Databases.MariaDb}); a batch claim that
 * fails part-way meets a trigger raising for one key ({@link Poison}).
 */
@Tag("mariadb")
class MariaDbStoreConformanceTest extends StoreConformanceSuite {

  @Override
  protected IdempotencyStore newStore() {
    return Databases.MariaDb.STORE;
  }

  @Override
  protected boolean poison(IdempotencyKey key) {
    Poison.inject(Databases.MariaDb.STORE, key);
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    Poison.heal(Databases.MariaDb.STORE, key);
  }
}
