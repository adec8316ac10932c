package dev.once.kafka;

import dev.once.spi.IdempotencyStore;

/** The consumer contract on PostgreSQL ({@code once-jdbc}); effects are rows of a table. */
class PostgresStoreConsumerTest extends IdempotentConsumerContract {

  @Override
  protected IdempotencyStore store() {
    return Postgres.STORE;
  }

  @Override
  protected Effects newEffects() {
    return new TableEffects(Postgres.DATA_SOURCE);
  }
}
