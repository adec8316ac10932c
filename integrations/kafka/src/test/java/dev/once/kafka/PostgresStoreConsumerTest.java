package dev.once.kafka;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Effects;
import dev.once.testkit.TableEffects;

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

  /**
   * The store's table is renamed away (a migration gone wrong, a DBA's mistake): every statement
   * of the store fails in the database until it is renamed back. The effects table is untouched.
   */
  @Override
  protected StoreOutage outage() {
    String away = Postgres.TABLE + "_away";
    return new StoreOutage() {
      @Override
      public IdempotencyStore store() {
        return Postgres.STORE;
      }

      @Override
      public void begin() {
        Postgres.execute("ALTER TABLE " + Postgres.TABLE + " RENAME TO " + away);
      }

      @Override
      public void end() {
        Postgres.execute("ALTER TABLE IF EXISTS " + away + " RENAME TO " + Postgres.TABLE);
      }
    };
  }
}
