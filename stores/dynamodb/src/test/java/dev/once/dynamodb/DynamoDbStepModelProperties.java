package dev.once.dynamodb;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StepModelProperties;

/** Durable steps under dying and frozen workers, against DynamoDB Local (its embedded client). */
class DynamoDbStepModelProperties extends StepModelProperties {
  @Override
  protected IdempotencyStore newStore() {
    DynamoDbStore store = DynamoDbStore.builder(DynamoDbLocal.embedded())
        .table(DynamoDbLocal.uniqueTable("steps")).build();
    store.createTable();
    return store;
  }
}
