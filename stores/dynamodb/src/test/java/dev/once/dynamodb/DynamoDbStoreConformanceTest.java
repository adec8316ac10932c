package dev.once.dynamodb;

import dev.once.IdempotencyKey;
import dev.once.dynamodb.internal.RecordItems;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.StoreConformanceSuite;
import java.util.Map;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** The whole conformance suite against DynamoDB Local over HTTP (see {@link DynamoDbLocal}). */
class DynamoDbStoreConformanceTest extends StoreConformanceSuite {

  private static final DynamoDbStore STORE = DynamoDbLocal.get().newStore("conformance");

  @Override
  protected IdempotencyStore newStore() {
    return STORE;
  }

  /**
   * An item at the key that the claim's condition lets through (expired: {@code expires_at} 0)
   * but whose {@code token} is a string, so that the claim's update ({@code if_not_exists(token,
   * :base) + :one}) is refused by DynamoDB itself with a ValidationException ("An operand in the
   * update expression has an incorrect data type").
   */
  @Override
  protected boolean poison(IdempotencyKey key) {
    DynamoDbLocal.get().client().putItem(r -> r.tableName(STORE.table()).item(Map.of(
        "id", AttributeValue.fromS(RecordItems.keyString(key)),
        "expires_at", AttributeValue.fromN("0"),
        "token", AttributeValue.fromS("poison"))));
    return true;
  }

  @Override
  protected void heal(IdempotencyKey key) {
    DynamoDbLocal.get().client().deleteItem(r -> r.tableName(STORE.table()).key(Map.of(
        "id", AttributeValue.fromS(RecordItems.keyString(key)))));
  }
}
