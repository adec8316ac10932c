package dev.once.dynamodb;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreModelProperties;

/**
 * The model-based property test against DynamoDB Local, on its embedded client (the same engine
 * in this JVM, without HTTP): the property makes some 45,000 calls, and HTTP to DynamoDB Local
 * costs 2–4 ms each. The conformance suite covers the HTTP path.
 */
class DynamoDbStoreModelProperties extends StoreModelProperties {

  @Override
  protected IdempotencyStore newStore() {
    DynamoDbStore store = DynamoDbStore.builder(DynamoDbLocal.embedded())
        .table(DynamoDbLocal.uniqueTable("model")).build();
    store.createTable();
    return store;
  }
}
