package dev.once.dynamodb.internal;

import java.time.Duration;
import software.amazon.awssdk.core.waiters.WaiterOverrideConfiguration;
import software.amazon.awssdk.retries.api.BackoffStrategy;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ResourceInUseException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;
import software.amazon.awssdk.services.dynamodb.model.TableDescription;
import software.amazon.awssdk.services.dynamodb.model.TimeToLiveDescription;
import software.amazon.awssdk.services.dynamodb.model.TimeToLiveStatus;
import software.amazon.awssdk.services.dynamodb.waiters.DynamoDbWaiter;

/**
 * Creates the records table if it is missing (partition key only, on-demand billing), waits until
 * it is ACTIVE and enables native TTL on the TTL attribute. Checks an existing table instead of
 * changing it.
 */
public final class TableSetup {

  private static final Duration POLL = Duration.ofMillis(500);
  private static final int MAX_POLLS = 600;

  private TableSetup() {}

  /** @return true if this call created the table */
  public static boolean ensure(DynamoDbClient client, String table, AttributeNames names) {
    String keyName = names.get(Attribute.KEY);
    boolean created = false;
    TableDescription existing = describe(client, table);
    if (existing == null) {
      try {
        client.createTable(r -> r.tableName(table)
            .billingMode(BillingMode.PAY_PER_REQUEST)
            .attributeDefinitions(AttributeDefinition.builder().attributeName(keyName)
                .attributeType(ScalarAttributeType.S).build())
            .keySchema(KeySchemaElement.builder().attributeName(keyName).keyType(KeyType.HASH)
                .build()));
        created = true;
      } catch (ResourceInUseException e) {
        // Another instance created it at the same moment: check it as an existing table.
      }
    }
    try (DynamoDbWaiter waiter = DynamoDbWaiter.builder().client(client)
        .overrideConfiguration(WaiterOverrideConfiguration.builder()
            .backoffStrategyV2(BackoffStrategy.fixedDelayWithoutJitter(POLL))
            .maxAttempts(MAX_POLLS).build())
        .build()) {
      waiter.waitUntilTableExists(r -> r.tableName(table));
    }
    checkKeySchema(describe(client, table), table, keyName);
    enableTtl(client, table, names.get(Attribute.TTL));
    return created;
  }

  private static TableDescription describe(DynamoDbClient client, String table) {
    try {
      return client.describeTable(r -> r.tableName(table)).table();
    } catch (ResourceNotFoundException e) {
      return null;
    }
  }

  private static void checkKeySchema(TableDescription table, String name, String keyName) {
    boolean ok = table.keySchema().size() == 1
        && table.keySchema().get(0).keyType() == KeyType.HASH
        && table.keySchema().get(0).attributeName().equals(keyName)
        && table.attributeDefinitions().stream().anyMatch(d -> d.attributeName().equals(keyName)
            && d.attributeType() == ScalarAttributeType.S);
    if (!ok) {
      throw new IllegalStateException("table '" + name + "' exists with key schema "
          + table.keySchema() + ", but the store needs a single string partition key named '"
          + keyName + "' (RecordAttribute.KEY)");
    }
  }

  private static void enableTtl(DynamoDbClient client, String table, String ttlName) {
    TimeToLiveDescription ttl = client.describeTimeToLive(r -> r.tableName(table))
        .timeToLiveDescription();
    TimeToLiveStatus status = ttl == null ? null : ttl.timeToLiveStatus();
    if (status == TimeToLiveStatus.ENABLED || status == TimeToLiveStatus.ENABLING) {
      if (!ttlName.equals(ttl.attributeName())) {
        throw new IllegalStateException("table '" + table + "' has TTL on attribute '"
            + ttl.attributeName() + "' (a table has only one): configure"
            + " attributeName(RecordAttribute.TTL, \"" + ttl.attributeName() + "\")");
      }
      return;
    }
    if (status == TimeToLiveStatus.DISABLING) {
      throw new IllegalStateException("TTL of table '" + table + "' is being disabled; DynamoDB"
          + " refuses to enable it again for up to an hour: call createTable() later");
    }
    client.updateTimeToLive(r -> r.tableName(table).timeToLiveSpecification(s -> s
        .enabled(true).attributeName(ttlName)));
  }
}
