package dev.once.webflux;

import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import java.nio.file.Path;

/** The HTTP contract over the JDBC store on an SQLite file. */
class SqliteWebFilterTest extends WebFluxContract {

  @Override
  protected IdempotencyStore newStore(Path dir) {
    JdbcStore store = JdbcStore.sqlite(dir.resolve("once.db"));
    store.createSchema();
    return store;
  }
}
