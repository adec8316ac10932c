package dev.once.sqs;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Effects;
import dev.once.testkit.TableEffects;

/** The SQS consumer contract on PostgreSQL ({@code once-jdbc}); effects are rows of a table. */
class PostgresStoreSqsConsumerTest extends IdempotentSqsConsumerContract {

  @Override
  protected IdempotencyStore store() {
    return Postgres.STORE;
  }

  @Override
  protected Effects newEffects() {
    return new TableEffects(Postgres.DATA_SOURCE);
  }
}
