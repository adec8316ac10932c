package dev.once.dynamodb;

import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;

/** The whole conformance suite against DynamoDB Local over HTTP (see {@link DynamoDbLocal}). */
class DynamoDbStoreConformanceTest extends StoreConformanceSuite {

  private static final DynamoDbStore STORE = DynamoDbLocal.get().newStore("conformance");

  @Override
  protected IdempotencyStore newStore() {
    return STORE;
  }
}
