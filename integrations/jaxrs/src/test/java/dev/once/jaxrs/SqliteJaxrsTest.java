package dev.once.jaxrs;

import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyStore;
import java.nio.file.Path;

/** The HTTP contract through Jersey over the JDBC store on an SQLite file. */
class SqliteJaxrsTest extends JerseyContract {

  @Override
  protected IdempotencyStore newStore(Path dir) {
    JdbcStore store = JdbcStore.sqlite(dir.resolve("once.db"));
    store.createSchema();
    return store;
  }
}
