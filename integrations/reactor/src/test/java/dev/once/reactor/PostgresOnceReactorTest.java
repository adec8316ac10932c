package dev.once.reactor;

import dev.once.spi.IdempotencyStore;

/** {@link OnceReactorContract} on PostgreSQL ({@code once-jdbc}, embedded PostgreSQL). */
class PostgresOnceReactorTest extends OnceReactorContract {

  @Override
  protected IdempotencyStore store() {
    return Stores.Postgres.STORE;
  }
}
