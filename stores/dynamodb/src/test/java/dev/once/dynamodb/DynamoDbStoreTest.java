package dev.once.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.PayloadTooLargeException;
import dev.once.StoreUnavailableException;
import dev.once.dynamodb.internal.Expressions;
import dev.once.dynamodb.internal.RecordItems;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.ClaimRules;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;
import software.amazon.awssdk.services.dynamodb.model.TableDescription;
import software.amazon.awssdk.services.dynamodb.model.TimeToLiveDescription;
import software.amazon.awssdk.services.dynamodb.model.TimeToLiveStatus;

/** What the conformance suite does not cover: DynamoDB specifics, against DynamoDB Local. */
class DynamoDbStoreTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private static final Duration RETENTION = Duration.ofHours(24);
  private static final Fingerprint FP = Fingerprint.of("A");

  private static final DynamoDbLocal LOCAL = DynamoDbLocal.get();
  private static final CallCounter CALLS = new CallCounter();
  private static DynamoDbClient countedClient;
  private static DynamoDbStore store;

  private final ManualClock clock = new ManualClock();
  private final String scope = "test." + UUID.randomUUID().toString().substring(0, 8);
  private int keys;

  @BeforeAll
  static void createStore() {
    countedClient = LOCAL.newClient(CALLS);
    store = DynamoDbStore.builder(countedClient).table(DynamoDbLocal.uniqueTable("store-test"))
        .build();
    store.createTable();
  }

  @AfterAll
  static void closeClient() {
    countedClient.close();
  }

  @BeforeEach
  void forgetCalls() {
    CALLS.take();
  }

  private IdempotencyKey newKey() {
    return IdempotencyKey.of(scope, "key-" + ++keys);
  }

  private ClaimRequest request(IdempotencyKey key, Fingerprint fingerprint) {
    return new ClaimRequest(key, fingerprint, clock.instant(), LEASE, RETENTION);
  }

  private Claim.Acquired acquire(DynamoDbStore s, IdempotencyKey key) {
    return acquire(s, key, request(key, FP));
  }

  private Claim.Acquired acquire(DynamoDbStore s, IdempotencyKey key, ClaimRequest request) {
    Claim claim = s.claim(request);
    assertThat(claim).isInstanceOf(Claim.Acquired.class);
    return (Claim.Acquired) claim;
  }

  private Map<String, AttributeValue> rawItem(DynamoDbStore s, String keyAttribute,
      IdempotencyKey key) {
    return LOCAL.client().getItem(r -> r.tableName(s.table()).consistentRead(true)
        .key(Map.of(keyAttribute, AttributeValue.fromS(
            key.scope() + " " + key.tenant() + " " + key.key())))).item();
  }

  /**
   * An item at {@code key} that the claim's condition lets through (expired) but whose token is a
   * string: DynamoDB refuses the claim's update with a ValidationException.
   */
  private static void poison(DynamoDbStore s, IdempotencyKey key) {
    LOCAL.client().putItem(r -> r.tableName(s.table()).item(Map.of(
        "id", AttributeValue.fromS(RecordItems.keyString(key)),
        "expires_at", AttributeValue.fromN("0"),
        "token", AttributeValue.fromS("poison"))));
  }

  private static void heal(DynamoDbStore s, IdempotencyKey key) {
    LOCAL.client().deleteItem(r -> r.tableName(s.table())
        .key(Map.of("id", AttributeValue.fromS(RecordItems.keyString(key)))));
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private static Outcome bytes(int size) {
    return Outcome.success("application/octet-stream", new byte[size]);
  }

  // -----------------------------------------------------------------------------------------------

  @Nested
  class RoundTrips {

    @Test
    void aNewKeyIsClaimedWithOneWrite() {
      acquire(store, newKey());

      assertThat(CALLS.take()).containsExactly("UpdateItem");
    }

    @Test
    void duplicatesAreAnsweredFromTheFailedConditionWithoutARead() {
      IdempotencyKey key = newKey();
      long token = acquire(store, key).token();
      CALLS.take();

      assertThat(store.claim(request(key, FP))).isInstanceOf(Claim.InProgress.class);
      assertThat(store.claim(request(key, Fingerprint.of("B")))).isEqualTo(new Claim.Mismatch());
      assertThat(CALLS.take()).containsExactly("UpdateItem", "UpdateItem");

      store.complete(key, token, Outcome.success("text/plain", new byte[] {1}), clock.instant(),
          RETENTION);
      assertThat(CALLS.take()).containsExactly("UpdateItem");
      assertThat(store.claim(request(key, FP))).isInstanceOf(Claim.Replay.class);
      assertThat(CALLS.take()).containsExactly("UpdateItem");
    }

    @Test
    void aRetryOrTakeoverTakesASecondWriteFencedOnTheToken() {
      IdempotencyKey key = newKey();
      Claim.Acquired first = acquire(store, key);
      store.fail(key, first.token(), "timeout", clock.instant(), RETENTION);
      CALLS.take();

      Claim.Acquired retry = acquire(store, key);
      assertThat(CALLS.take()).containsExactly("UpdateItem", "UpdateItem");
      clock.set(retry.leaseUntil());
      Claim.Acquired takeover = acquire(store, key);

      assertThat(CALLS.take()).containsExactly("UpdateItem", "UpdateItem");
      assertThat(retry.token()).isEqualTo(first.token() + 1);
      assertThat(takeover.token()).isEqualTo(first.token() + 2);
      assertThat(takeover.takeover()).isTrue();
    }

    @Test
    void anExpiredRecordStillInTheTableIsReplacedWithOneWriteContinuingItsToken() {
      IdempotencyKey key = newKey();
      long token = acquire(store, key).token();
      store.complete(key, token, Outcome.success("text/plain", new byte[] {1}), clock.instant(),
          RETENTION);
      clock.advance(RETENTION.plusMinutes(1));
      assertThat(store.find(key)).get().matches(r -> r.isExpired(clock.instant()));
      CALLS.take();

      Claim.Acquired fresh = acquire(store, key);

      assertThat(CALLS.take()).containsExactly("UpdateItem");
      assertThat(fresh.token()).isEqualTo(token + 1);
      assertThat(fresh.attempt()).isEqualTo(1);
      IdempotencyRecord r = store.find(key).orElseThrow();
      assertThat(r.outcome()).isNull();
      assertThat(r.createdAt()).isEqualTo(clock.instant());
    }
  }

  // -----------------------------------------------------------------------------------------------

  @Nested
  class Items {

    @Test
    void numbersAreStoredAsNumbersAndTheTtlInEpochSecondsRoundedUp() {
      clock.set(Instant.parse("2030-01-01T00:00:00.250Z"));
      IdempotencyKey key = IdempotencyKey.of(scope, "tenant-1", "a key with spaces");
      Claim.Acquired acquired = acquire(store, key);

      Map<String, AttributeValue> item = rawItem(store, "id", key);

      assertThat(item.get("id").s()).isEqualTo(scope + " tenant-1 a key with spaces");
      assertThat(item.get("status").s()).isEqualTo("IN_PROGRESS");
      assertThat(item.get("token").n()).isEqualTo(Long.toString(acquired.token()));
      assertThat(acquired.token()).isEqualTo(ClaimRules.firstToken(clock.instant()));
      assertThat(item.get("attempts").n()).isEqualTo("1");
      long expiresMicros = (clock.instant().getEpochSecond() + RETENTION.toSeconds()) * 1_000_000
          + 250_000;
      assertThat(item.get("expires_at").n()).isEqualTo(Long.toString(expiresMicros));
      assertThat(item.get("lease_until").n()).isEqualTo(Long.toString(
          (clock.instant().getEpochSecond() + LEASE.toSeconds()) * 1_000_000 + 250_000));
      assertThat(item.get("ttl").n()).isEqualTo(Long.toString(expiresMicros / 1_000_000 + 1));
      assertThat(item.get("fingerprint").b()).isEqualTo(SdkBytes.fromByteArray(FP.digest()));
      assertThat(item).doesNotContainKeys("outcome_body", "checkpoint_name", "last_error");
      assertThat(store.find(key).orElseThrow().key()).isEqualTo(key);
    }

    /**
     * Items as the store has always written them (the attribute names and types of the record
     * format, put here with the raw client): the claim's and the writes' expressions read and
     * change them as before.
     */
    @Test
    void itemsInTheRecordFormatAreReplayedRetriedAndTakenOver() {
      clock.set(Instant.parse("2030-01-01T00:00:00Z"));
      long now = 1_893_456_000_000_000L; // clock.instant() in epoch microseconds
      IdempotencyKey completed = newKey();
      IdempotencyKey failed = newKey();
      IdempotencyKey abandoned = newKey();
      putRecord(completed, "COMPLETED", 7, now + 60_000_000, Map.of(
          "outcome_kind", AttributeValue.fromS("SUCCESS"),
          "outcome_media_type", AttributeValue.fromS("text/plain"),
          "outcome_body", AttributeValue.fromB(SdkBytes.fromByteArray(new byte[] {42}))));
      putRecord(failed, "FAILED", 8, now - 1, Map.of(
          "last_error", AttributeValue.fromS("timeout")));
      putRecord(abandoned, "IN_PROGRESS", 9, now - 1, Map.of(
          "checkpoint_name", AttributeValue.fromS("charged"),
          "checkpoint_data", AttributeValue.fromB(SdkBytes.fromByteArray(new byte[] {1}))));

      assertThat(store.claim(request(completed, FP))).isEqualTo(
          new Claim.Replay(Outcome.success("text/plain", new byte[] {42}), 7));
      Claim.Acquired retry = acquire(store, failed);
      Claim.Acquired takeover = acquire(store, abandoned);

      assertThat(retry.token()).isEqualTo(9);
      assertThat(retry.attempt()).isEqualTo(2);
      assertThat(takeover.token()).isEqualTo(10);
      assertThat(takeover.takeover()).isTrue();
      assertThat(takeover.checkpoint()).isEqualTo(Checkpoint.of("charged", new byte[] {1}));
      store.complete(failed, retry.token(), Outcome.success("text/plain", new byte[] {2}),
          clock.instant(), RETENTION);
      assertThat(rawItem(store, "id", failed).get("status").s()).isEqualTo("COMPLETED");
      assertThat(rawItem(store, "id", failed).get("outcome_body").b())
          .isEqualTo(SdkBytes.fromByteArray(new byte[] {2}));
    }

    private void putRecord(IdempotencyKey key, String status, long token, long leaseUntil,
        Map<String, AttributeValue> extra) {
      long created = 1_893_455_000_000_000L;
      long expires = created + RETENTION.toNanos() / 1000;
      Map<String, AttributeValue> item = new java.util.HashMap<>(Map.of(
          "id", AttributeValue.fromS(RecordItems.keyString(key)),
          "status", AttributeValue.fromS(status),
          "fingerprint", AttributeValue.fromB(SdkBytes.fromByteArray(FP.digest())),
          "token", AttributeValue.fromN(Long.toString(token)),
          "lease_until", AttributeValue.fromN(Long.toString(leaseUntil)),
          "attempts", AttributeValue.fromN("1"),
          "created_at", AttributeValue.fromN(Long.toString(created)),
          "updated_at", AttributeValue.fromN(Long.toString(created)),
          "expires_at", AttributeValue.fromN(Long.toString(expires)),
          "ttl", AttributeValue.fromN(Long.toString(expires / 1_000_000 + 1))));
      item.putAll(extra);
      LOCAL.client().putItem(r -> r.tableName(store.table()).item(item));
    }

    @Test
    void instantsAreFlooredToTheMicrosecond() {
      clock.set(Instant.parse("2030-01-01T00:00:00.000000999Z"));
      IdempotencyKey key = newKey();

      Claim.Acquired acquired = acquire(store, key);

      assertThat(acquired.leaseUntil()).isEqualTo(Instant.parse("2030-01-01T00:00:30Z"));
      assertThat(store.find(key).orElseThrow().createdAt())
          .isEqualTo(Instant.parse("2030-01-01T00:00:00Z"));
      assertThat(store.claim(request(key, FP)))
          .isEqualTo(new Claim.InProgress(acquired.leaseUntil()));
    }

    @Test
    void configuredAttributeNamesAreUsedEverywhere() {
      DynamoDbStore renamed = DynamoDbStore.builder(LOCAL.client())
          .table(DynamoDbLocal.uniqueTable("renamed"))
          .attributeName(RecordAttribute.KEY, "pk")
          .attributeName(RecordAttribute.STATUS, "state")
          .attributeName(RecordAttribute.TTL, "expiration")
          .attributeName(RecordAttribute.OUTCOME_BODY, "data")
          .build();
      renamed.createTable();
      IdempotencyKey key = newKey();
      long token = acquire(renamed, key).token();
      renamed.checkpoint(key, token, Checkpoint.of("step", new byte[] {7}), clock.instant());
      renamed.complete(key, token, Outcome.success("text/plain", new byte[] {42}),
          clock.instant(), RETENTION);

      Map<String, AttributeValue> item = rawItem(renamed, "pk", key);

      assertThat(item).containsKeys("pk", "state", "expiration", "data", "token")
          .doesNotContainKeys("id", "status", "ttl", "outcome_body");
      assertThat(item.get("state").s()).isEqualTo("COMPLETED");
      assertThat(renamed.claim(request(key, FP))).isEqualTo(
          new Claim.Replay(Outcome.success("text/plain", new byte[] {42}), token));
      assertThat(renamed.attributeName(RecordAttribute.TTL)).isEqualTo("expiration");
      clock.advance(RETENTION);
      assertThat(renamed.purgeExpired(clock.instant(), 10)).isEqualTo(1);
      assertThat(renamed.find(key)).isEmpty();
    }

    @Test
    void aLongErrorIsCut() {
      IdempotencyKey key = newKey();
      long token = acquire(store, key).token();

      store.fail(key, token, "x".repeat(10_000), clock.instant(), RETENTION);

      assertThat(store.find(key).orElseThrow().lastError()).hasSize(4096);
    }

    @Test
    void anItemThatIsNotARecordIsAClearError() {
      IdempotencyKey key = newKey();
      LOCAL.client().putItem(r -> r.tableName(store.table()).item(Map.of(
          "id", AttributeValue.fromS(scope + "  " + key.key()),
          "something", AttributeValue.fromS("else"))));

      assertThatThrownBy(() -> store.claim(request(key, FP)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("is not a Once record")
          .hasMessageContaining("'status'");
    }
  }

  // -----------------------------------------------------------------------------------------------

  @Nested
  class ItemSizeLimit {

    @Test
    void theDefaultBoundLetsAnOutcomeAndACheckpointAtTheBoundFitInOneItem() {
      int bound = DynamoDbStore.DEFAULT_MAX_PAYLOAD_BYTES;
      IdempotencyKey key = IdempotencyKey.of(scope, "t".repeat(128), "k".repeat(255));
      long token = acquire(store, key).token();

      store.checkpoint(key, token, Checkpoint.of("c".repeat(128), new byte[bound]),
          clock.instant());
      store.fail(key, token, "e".repeat(5000), clock.instant(), RETENTION);
      long retry = acquire(store, key).token();
      store.complete(key, retry, Outcome.success("m".repeat(200), new byte[bound]),
          clock.instant(), RETENTION);

      assertThat(store.maxPayloadBytes()).isEqualTo(bound);
      assertThat(bound).isEqualTo((400 * 1024 - 8 * 1024) / 2);
      assertThat(((Claim.Replay) store.claim(request(key, FP))).outcome().size()).isEqualTo(bound);
    }

    @Test
    void largerOutcomesAndCheckpointsAreRefusedBeforeTheCall() {
      IdempotencyKey key = newKey();
      long token = acquire(store, key).token();
      CALLS.take();
      int tooBig = store.maxPayloadBytes() + 1;

      assertThatThrownBy(() -> store.complete(key, token, bytes(tooBig), clock.instant(),
          RETENTION)).isInstanceOf(PayloadTooLargeException.class)
          .hasMessageContaining(tooBig + " bytes");
      assertThatThrownBy(() -> store.checkpoint(key, token, Checkpoint.of("c", new byte[tooBig]),
          clock.instant())).isInstanceOf(PayloadTooLargeException.class);

      assertThat(CALLS.take()).isEmpty();
      IdempotencyRecord r = store.find(key).orElseThrow();
      assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(r.checkpoint()).isNull();
    }

    @Test
    void aboveTheDefaultAnItemOverDynamoDbsLimitIsRefusedAndNothingChanges() {
      DynamoDbStore big = DynamoDbStore.builder(LOCAL.client()).table(store.table())
          .maxPayloadBytes(DynamoDbStore.MAX_PAYLOAD_BYTES_LIMIT).build();
      IdempotencyKey key = newKey();
      long token = acquire(big, key).token();
      big.checkpoint(key, token, Checkpoint.of("big", new byte[300 * 1024]), clock.instant());

      assertThatThrownBy(() -> big.complete(key, token, bytes(300 * 1024), clock.instant(),
          RETENTION)).isInstanceOf(PayloadTooLargeException.class)
          .hasMessageContaining("409600");

      IdempotencyRecord r = big.find(key).orElseThrow();
      assertThat(r.status()).isEqualTo(Status.IN_PROGRESS);
      assertThat(r.token()).isEqualTo(token);
      big.complete(key, token, bytes(50 * 1024), clock.instant(), RETENTION);
      assertThat(big.claim(request(key, FP))).isInstanceOf(Claim.Replay.class);
    }
  }

  // -----------------------------------------------------------------------------------------------

  @Nested
  class TableCreation {

    @Test
    void createsAnOnDemandTableWithTtlOnceAndThenOnlyChecksIt() {
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client())
          .table(DynamoDbLocal.uniqueTable("created")).build();

      assertThat(s.createTable()).isTrue();
      assertThat(s.createTable()).isFalse();

      TableDescription table = LOCAL.client().describeTable(r -> r.tableName(s.table())).table();
      assertThat(table.billingModeSummary().billingMode()).isEqualTo(BillingMode.PAY_PER_REQUEST);
      assertThat(table.keySchema()).singleElement().satisfies(k -> {
        assertThat(k.attributeName()).isEqualTo("id");
        assertThat(k.keyType()).isEqualTo(KeyType.HASH);
      });
      assertThat(table.attributeDefinitions()).singleElement()
          .satisfies(d -> assertThat(d.attributeType()).isEqualTo(ScalarAttributeType.S));
      TimeToLiveDescription ttl = LOCAL.client()
          .describeTimeToLive(r -> r.tableName(s.table())).timeToLiveDescription();
      assertThat(ttl.timeToLiveStatus()).isEqualTo(TimeToLiveStatus.ENABLED);
      assertThat(ttl.attributeName()).isEqualTo("ttl");
    }

    @Test
    void enablesTtlOnAnExistingTableWithoutIt() {
      String name = DynamoDbLocal.uniqueTable("no-ttl");
      createBareTable(name, "id");
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).table(name).build();

      assertThat(s.createTable()).isFalse();

      assertThat(LOCAL.client().describeTimeToLive(r -> r.tableName(name))
          .timeToLiveDescription().timeToLiveStatus()).isEqualTo(TimeToLiveStatus.ENABLED);
    }

    @Test
    void refusesATableWithAnotherKeySchema() {
      String name = DynamoDbLocal.uniqueTable("other-key");
      createBareTable(name, "pk");
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).table(name).build();

      assertThatThrownBy(s::createTable).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("single string partition key named 'id'");
    }

    @Test
    void refusesATableWhoseTtlIsOnAnotherAttribute() {
      DynamoDbStore first = DynamoDbStore.builder(LOCAL.client())
          .table(DynamoDbLocal.uniqueTable("ttl-clash"))
          .attributeName(RecordAttribute.TTL, "expiration").build();
      first.createTable();
      DynamoDbStore second = DynamoDbStore.builder(LOCAL.client()).table(first.table()).build();

      assertThatThrownBy(second::createTable).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("attributeName(RecordAttribute.TTL, \"expiration\")");
    }

    private void createBareTable(String name, String key) {
      LOCAL.client().createTable(r -> r.tableName(name).billingMode(BillingMode.PAY_PER_REQUEST)
          .attributeDefinitions(AttributeDefinition.builder().attributeName(key)
              .attributeType(ScalarAttributeType.S).build())
          .keySchema(KeySchemaElement.builder().attributeName(key).keyType(KeyType.HASH).build()));
    }
  }

  // -----------------------------------------------------------------------------------------------

  @Nested
  class BatchClaims {

    @Test
    void keysAreClaimedInParallelWithinTheBoundAndEachKeyInOrder() {
      CallCounter async = new CallCounter();
      try (DynamoDbAsyncClient asyncClient = LOCAL.newAsyncClient(async)) {
        DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).asyncClient(asyncClient)
            .claimAllConcurrency(4).table(store.table()).build();
        List<ClaimRequest> batch = new ArrayList<>();
        List<IdempotencyKey> distinct = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
          IdempotencyKey key = newKey();
          distinct.add(key);
          batch.add(request(key, FP));
          if (i % 10 == 0) {
            batch.add(request(key, FP));
          }
        }

        List<Claim> claims = s.claimAll(batch);

        assertThat(s.claimsBatchesInParallel()).isTrue();
        assertThat(claims).hasSize(33);
        assertThat(claims).filteredOn(c -> c instanceof Claim.Acquired).hasSize(30);
        for (int i = 0, k = 0; i < batch.size(); i++, k++) {
          assertThat(claims.get(i)).as("first request of key %s", k)
              .isInstanceOf(Claim.Acquired.class);
          if (k % 10 == 0) {
            i++;
            assertThat(claims.get(i)).as("second request of key %s", k)
                .isEqualTo(new Claim.InProgress(((Claim.Acquired) claims.get(i - 1)).leaseUntil()));
          }
        }
        assertThat(async.take()).hasSize(33).containsOnly("UpdateItem");
        assertThat(async.maxInFlight()).isBetween(2, 4);
        distinct.forEach(key -> assertThat(store.find(key)).isPresent());
      }
    }

    @Test
    void withoutAnAsyncClientKeysAreClaimedOneByOne() {
      IdempotencyKey a = newKey();
      IdempotencyKey b = newKey();
      assertThat(store.claimsBatchesInParallel()).isFalse();

      List<Claim> claims = store.claimAll(List.of(request(a, FP), request(b, FP), request(a, FP)));

      assertThat(claims.get(0)).isInstanceOf(Claim.Acquired.class);
      assertThat(claims.get(1)).isInstanceOf(Claim.Acquired.class);
      assertThat(claims.get(2)).isInstanceOf(Claim.InProgress.class);
      assertThat(CALLS.take()).containsExactly("UpdateItem", "UpdateItem", "UpdateItem");
    }

    @Test
    void aClaimDynamoDbRefusesInTheMiddleReleasesTheOthersOnBothPaths() {
      DynamoDbStore parallel = DynamoDbStore.builder(LOCAL.client())
          .asyncClient(LOCAL.asyncClient()).table(store.table()).build();
      for (DynamoDbStore s : List.of(store, parallel)) {
        List<IdempotencyKey> keys = List.of(newKey(), newKey(), newKey(), newKey(), newKey());
        poison(s, keys.get(2));
        try {
          assertThatThrownBy(() -> s.claimAll(keys.stream().map(k -> request(k, FP)).toList()))
              .isInstanceOf(StoreUnavailableException.class)
              .hasMessageContaining("ValidationException");
        } finally {
          heal(s, keys.get(2));
        }

        for (IdempotencyKey key : keys) {
          Optional<IdempotencyRecord> r = store.find(key);
          assertThat(r.map(IdempotencyRecord::status)).as("%s", key)
              .isIn(Optional.empty(), Optional.of(Status.FAILED));
          assertThat(acquire(store, key)).isNotNull();
        }
      }
    }

    @Test
    void aClaimWhoseAnswerWasLostIsLookedUpAndReleasedToo() {
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).table(store.table()).build();
      IdempotencyKey a = newKey();
      IdempotencyKey lostKey = newKey();
      IdempotencyKey c = newKey();
      String lostId = RecordItems.keyString(lostKey);
      LostAnswers lost = new LostAnswers(Integer.MAX_VALUE,
          r -> r.key().get("id").s().equals(lostId));
      try (DynamoDbAsyncClient asyncClient = LOCAL.newAsyncClient(lost)) {
        DynamoDbStore parallel = DynamoDbStore.builder(LOCAL.client()).asyncClient(asyncClient)
            .table(store.table()).build();

        assertThatThrownBy(() -> parallel.claimAll(List.of(request(a, FP), request(lostKey, FP),
            request(c, FP)))).isInstanceOfSatisfying(StoreUnavailableException.class,
                e -> assertThat(e.mayHaveBeenApplied()).isTrue());

        assertThat(lost.attempts()).isEqualTo(3);
        for (IdempotencyKey key : List.of(a, lostKey, c)) {
          IdempotencyRecord r = s.find(key).orElseThrow();
          assertThat(r.status()).as("%s", key).isEqualTo(Status.FAILED);
          assertThat(acquire(s, key).token()).isEqualTo(r.token() + 1);
        }
      }
    }

    @Test
    void aFailedClaimFailsTheBatchAndReleasesWhatItAcquired() {
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).asyncClient(LOCAL.asyncClient())
          .table(store.table()).build();
      IdempotencyKey good = newKey();
      IdempotencyKey broken = newKey();
      LOCAL.client().putItem(r -> r.tableName(store.table()).item(Map.of(
          "id", AttributeValue.fromS(scope + "  " + broken.key()))));

      assertThatThrownBy(() -> s.claimAll(List.of(request(good, FP), request(broken, FP))))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("not a Once record");

      IdempotencyRecord released = store.find(good).orElseThrow();
      assertThat(released.status()).isEqualTo(Status.FAILED);
      assertThat(released.lastError()).startsWith("claimAll failed");
      Claim.Acquired retry = acquire(store, good);
      assertThat(retry.token()).isEqualTo(released.token() + 1);
    }
  }

  // -----------------------------------------------------------------------------------------------

  /**
   * The AWS SDK retries a request whose attempt failed after DynamoDB applied it (the answer was
   * lost): the retry is the same request re-sent. {@link LostAnswers} loses real answers of
   * DynamoDB Local so that the SDK retries for real.
   */
  @Nested
  class ResentRequests {

    @Test
    void theSameClaimSentTwiceIsAcquiredBothTimesWithTheSameTokenAndWritesNothing() {
      IdempotencyKey key = newKey();
      ClaimRequest request = request(key, FP);
      Claim.Acquired first = acquire(store, key, request);
      IdempotencyRecord written = store.find(key).orElseThrow();
      CALLS.take();

      Claim.Acquired again = acquire(store, key, request);

      assertThat(again.token()).isEqualTo(first.token());
      assertThat(again.leaseUntil()).isEqualTo(first.leaseUntil());
      assertThat(again.attempt()).isEqualTo(1);
      assertThat(CALLS.take()).as("one failed conditional write, no read")
          .containsExactly("UpdateItem");
      assertThat(store.find(key)).contains(written);
      assertThat(written.claimId()).isEqualTo(request.claimId());
      assertThat(rawItem(store, "id", key).get("claim_id").n())
          .isEqualTo(Long.toString(request.claimId()));
      // Another claim at the same instant is someone else's: in progress.
      assertThat(store.claim(request(key, FP))).isEqualTo(new Claim.InProgress(first.leaseUntil()));
    }

    @Test
    void aCompletionAndAFailureSentTwiceAreAcknowledgedFromTheFailedConditionsAnswer() {
      IdempotencyKey done = newKey();
      long token = acquire(store, done).token();
      Outcome outcome = Outcome.success("text/plain", new byte[] {1, 2});
      store.complete(done, token, outcome, clock.instant(), RETENTION);
      IdempotencyRecord completed = store.find(done).orElseThrow();
      IdempotencyKey failed = newKey();
      long failedToken = acquire(store, failed).token();
      store.fail(failed, failedToken, "timeout", clock.instant(), RETENTION);
      IdempotencyRecord failedRecord = store.find(failed).orElseThrow();
      CALLS.take();

      store.complete(done, token, outcome, clock.instant(), RETENTION);
      store.fail(failed, failedToken, "timeout", clock.instant(), RETENTION);

      assertThat(CALLS.take()).containsExactly("UpdateItem", "UpdateItem");
      assertThat(store.find(done)).contains(completed);
      assertThat(store.find(failed)).contains(failedRecord);
      assertThatThrownBy(() -> store.complete(done, token, Outcome.success("text/plain",
          new byte[] {3}), clock.instant(), RETENTION)).isInstanceOf(LeaseLostException.class);
      assertThatThrownBy(() -> store.fail(failed, failedToken, "other", clock.instant(),
          RETENTION)).isInstanceOf(LeaseLostException.class);
    }

    @Test
    void anSdkRetryOfAnAppliedClaimIsAcquiredWithTheTokenItsFirstAttemptWrote() {
      LostAnswers lost = new LostAnswers(1);
      try (DynamoDbClient client = LOCAL.newClient(lost)) {
        DynamoDbStore s = DynamoDbStore.builder(client).table(store.table()).build();
        IdempotencyKey key = newKey();
        ClaimRequest request = request(key, FP);

        Claim.Acquired acquired = acquire(s, key, request);

        assertThat(lost.attempts()).as("the SDK sent the claim again").isEqualTo(2);
        IdempotencyRecord r = store.find(key).orElseThrow();
        assertThat(acquired.token()).isEqualTo(r.token());
        assertThat(r.claimId()).isEqualTo(request.claimId());
        assertThat(r.attempts()).isEqualTo(1);

        // The completion's first answer lost too: the SDK's retry finds it applied.
        lost.loseNext(1);
        Outcome outcome = Outcome.success("text/plain", new byte[] {42});
        s.complete(key, acquired.token(), outcome, clock.instant(), RETENTION);
        assertThat(lost.attempts()).isEqualTo(4);
        assertThat(s.claim(request(key, FP)))
            .isEqualTo(new Claim.Replay(outcome, acquired.token()));
      }
    }

    @Test
    void onTheAsynchronousClientAnSdkRetryOfAnAppliedClaimAndCompletionAreTheClaimantsOwn()
        throws Exception {
      LostAnswers lost = new LostAnswers(1);
      try (DynamoDbAsyncClient asyncClient = LOCAL.newAsyncClient(lost)) {
        DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).asyncClient(asyncClient)
            .table(store.table()).build();
        IdempotencyKey key = newKey();
        ClaimRequest request = request(key, FP);
        java.util.concurrent.Executor noBlocking = task -> {
          throw new AssertionError("a blocking thread was asked for");
        };

        Claim claim = s.claimAsync(request, noBlocking).toCompletableFuture()
            .get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(lost.attempts()).as("the SDK sent the claim again").isEqualTo(2);
        long token = ((Claim.Acquired) claim).token();
        assertThat(store.find(key).orElseThrow().claimId()).isEqualTo(request.claimId());

        lost.loseNext(1);
        Outcome outcome = Outcome.success("text/plain", new byte[] {42});
        s.completeAsync(key, token, outcome, clock.instant(), RETENTION, noBlocking)
            .toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(lost.attempts()).as("the SDK sent the completion again").isEqualTo(4);
        assertThat(s.claim(request(key, FP))).isEqualTo(new Claim.Replay(outcome, token));
        assertThat(s.completeAsync(key, token, Outcome.success("text/plain", new byte[] {7}),
            clock.instant(), RETENTION, noBlocking).toCompletableFuture())
            .as("another outcome under that token").failsWithin(Duration.ofSeconds(30))
            .withThrowableOfType(java.util.concurrent.ExecutionException.class)
            .havingCause().isInstanceOf(LeaseLostException.class);
      }
    }

    @Test
    void anSdkRetryOfAnAppliedTakeoverAndOfAnAppliedFailureAreRecognised() {
      // Only the answer of the second write of a claim (the takeover, fenced on the old token).
      LostAnswers lostTakeovers = new LostAnswers(0,
          r -> r.expressionAttributeValues().containsKey(Expressions.value(":old_token")));
      LostAnswers lost = new LostAnswers(0);
      try (DynamoDbClient client = LOCAL.newClient(lostTakeovers, lost)) {
        DynamoDbStore s = DynamoDbStore.builder(client).table(store.table()).build();
        IdempotencyKey key = newKey();
        long first = acquire(s, key).token();
        clock.advance(LEASE);
        ClaimRequest takeover = request(key, FP);

        // The takeover is applied, its answer lost; the SDK re-sends it, and its condition fails
        // on the record it wrote itself.
        lostTakeovers.loseNext(1);
        Claim.Acquired taken = acquire(s, key, takeover);

        assertThat(lostTakeovers.attempts()).isEqualTo(2);
        assertThat(taken.token()).isEqualTo(first + 1);
        assertThat(store.find(key).orElseThrow().token()).isEqualTo(first + 1);
        assertThat(store.find(key).orElseThrow().attempts()).isEqualTo(2);

        lost.loseNext(1);
        s.fail(key, taken.token(), "gateway timeout", clock.instant(), RETENTION);
        IdempotencyRecord r = store.find(key).orElseThrow();
        assertThat(r.status()).isEqualTo(Status.FAILED);
        assertThat(r.lastError()).isEqualTo("gateway timeout");
      }
    }

    @Test
    void answersLostOnEveryAttemptAreUnavailableAndMayHaveBeenApplied() {
      LostAnswers lost = new LostAnswers(Integer.MAX_VALUE);
      try (DynamoDbClient client = LOCAL.newClient(lost)) {
        DynamoDbStore s = DynamoDbStore.builder(client).table(store.table()).build();
        IdempotencyKey key = newKey();
        ClaimRequest request = request(key, FP);

        assertThatThrownBy(() -> s.claim(request))
            .isInstanceOfSatisfying(StoreUnavailableException.class,
                e -> assertThat(e.mayHaveBeenApplied()).isTrue());

        // It was applied: the same request re-sent (answers reach us again) is the claimant's own.
        IdempotencyRecord r = store.find(key).orElseThrow();
        assertThat(r.claimId()).isEqualTo(request.claimId());
        assertThat(acquire(store, key, request).token()).isEqualTo(r.token());
      }
    }

    /**
     * {@code Once.callAsync} on the asynchronous client, every answer to the completion lost (the
     * SDK's retries included): the native write fails as maybe applied, the blocking retry finds
     * its own completion and is acknowledged, and the caller gets the value; a duplicate replays.
     */
    @Test
    void callAsyncWhoseEveryCompletionAnswerIsLostAnswersTheValueOnceStoredAndRunsOnce()
        throws Exception {
      LostAnswers lost = new LostAnswers(Integer.MAX_VALUE,
          r -> r.expressionAttributeValues().containsKey(Expressions.value(":completed")));
      java.util.concurrent.ExecutorService executor =
          java.util.concurrent.Executors.newCachedThreadPool();
      try (DynamoDbAsyncClient asyncClient = LOCAL.newAsyncClient(lost)) {
        DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).asyncClient(asyncClient)
            .table(store.table()).build();
        dev.once.Once once = dev.once.Once.builder(s).clock(clock).lease(LEASE)
            .sleeper(pause -> { }).asyncExecutor(executor).build();
        IdempotencyKey key = newKey();
        java.util.concurrent.atomic.AtomicInteger runs =
            new java.util.concurrent.atomic.AtomicInteger();

        dev.once.Result<String> first = once.callAsync(key, FP, dev.once.Codecs.utf8(), a -> {
          runs.incrementAndGet();
          return java.util.concurrent.CompletableFuture.completedFuture("done");
        }).get(60, java.util.concurrent.TimeUnit.SECONDS);
        dev.once.Result<String> again = once.callAsync(key, FP, dev.once.Codecs.utf8(), a -> {
          runs.incrementAndGet();
          return java.util.concurrent.CompletableFuture.completedFuture("again");
        }).get(60, java.util.concurrent.TimeUnit.SECONDS);

        assertThat(lost.lost()).as("the native completion's answers were lost").isPositive();
        assertThat(first.value()).isEqualTo("done");
        assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
        assertThat(again.replayed()).isTrue();
        assertThat(again.value()).isEqualTo("done");
        assertThat(runs).hasValue(1);
      } finally {
        executor.shutdownNow();
      }
    }

    @Test
    void aRequestDynamoDbRefusedWasNotApplied() {
      IdempotencyKey key = newKey();
      poison(store, key);
      try {
        assertThatThrownBy(() -> store.claim(request(key, FP)))
            .isInstanceOfSatisfying(StoreUnavailableException.class,
                e -> assertThat(e.mayHaveBeenApplied()).isFalse())
            .hasMessageContaining("ValidationException");
      } finally {
        heal(store, key);
      }
      assertThat(acquire(store, key).attempt()).isEqualTo(1);
    }
  }

  // -----------------------------------------------------------------------------------------------

  @Nested
  class Configuration {

    @Test
    void badSettingsAreRefusedAtOnce() {
      DynamoDbStore.Builder builder = DynamoDbStore.builder(LOCAL.client());

      assertThatThrownBy(() -> builder.table("ab")).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("3–255 characters");
      assertThatThrownBy(() -> builder.table("once/records"))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> builder.table(null)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> builder.attributeName(RecordAttribute.TTL, ""))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> builder.maxPayloadBytes(0))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> builder.maxPayloadBytes(DynamoDbStore.MAX_PAYLOAD_BYTES_LIMIT + 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("400 KB");
      assertThatThrownBy(() -> builder.claimAllConcurrency(0))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> builder.endpoint(URI.create("http://127.0.0.1:8000")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("configure your DynamoDbClient");
      assertThatThrownBy(() -> builder.credentials(DynamoDbLocal.credentials()))
          .isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> DynamoDbStore.builder(Region.EU_WEST_1)
          .asyncClient(LOCAL.asyncClient())).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> DynamoDbStore.builder(Region.EU_WEST_1)
          .endpoint(URI.create("localhost:8000"))).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> DynamoDbStore.builder((DynamoDbClient) null))
          .isInstanceOf(NullPointerException.class);
    }

    @Test
    void twoAttributesCannotShareAName() {
      DynamoDbStore.Builder builder = DynamoDbStore.builder(LOCAL.client())
          .attributeName(RecordAttribute.TTL, "expires_at");

      assertThatThrownBy(builder::build).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("EXPIRES_AT and TTL would both be named 'expires_at'");
    }

    @Test
    void aMissingTableIsStoreUnavailableWithAHint() {
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).table("no-such-table").build();

      assertThatThrownBy(() -> s.claim(request(newKey(), FP)))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("'no-such-table' does not exist")
          .hasMessageContaining("createTable()");
      assertThatThrownBy(() -> s.find(newKey())).isInstanceOf(StoreUnavailableException.class);
    }

    @Test
    void claimAsyncOnTheAsynchronousClientNeverTakesABlockingThread() throws Exception {
      DynamoDbStore s = LOCAL.newStore("async");
      java.util.concurrent.Executor noThreads = task -> {
        throw new AssertionError("a blocking thread was taken");
      };
      try {
        Claim first = s.claimAsync(request(newKey(), FP), noThreads).toCompletableFuture()
            .get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(first).isInstanceOf(Claim.Acquired.class);

        DynamoDbStore missing = DynamoDbStore.builder(LOCAL.client())
            .asyncClient(LOCAL.asyncClient()).table("no-such-table").build();
        assertThat(missing.claimAsync(request(newKey(), FP), noThreads).toCompletableFuture())
            .failsWithin(java.time.Duration.ofSeconds(30))
            .withThrowableOfType(java.util.concurrent.ExecutionException.class)
            .havingCause().isInstanceOf(dev.once.SchemaMissingException.class);
      } finally {
        s.close();
      }
    }

    @Test
    void aMissingTableIsASetUpMistakeNotAnOutage() {
      DynamoDbStore s = DynamoDbStore.builder(LOCAL.client()).table("no-such-table").build();

      assertThatThrownBy(() -> s.claim(request(newKey(), FP)))
          .isInstanceOfSatisfying(dev.once.SchemaMissingException.class,
              e -> assertThat(e.mayHaveBeenApplied()).isFalse());
    }

    @Test
    void aStoreBuiltFromARegionAndEndpointOwnsItsClients() {
      try (DynamoDbStore s = DynamoDbStore.builder(DynamoDbLocal.REGION)
          .endpoint(LOCAL.endpoint())
          .credentials(DynamoDbLocal.credentials())
          .table(DynamoDbLocal.uniqueTable("owned"))
          .build()) {
        assertThat(s.createTable()).isTrue();
        IdempotencyKey key = newKey();
        long token = acquire(s, key).token();
        s.complete(key, token, Outcome.success("text/plain", new byte[] {1}), clock.instant(),
            RETENTION);

        assertThat(s.claimsBatchesInParallel()).isTrue();
        assertThat(s.claimAll(List.of(request(key, FP), request(newKey(), FP))))
            .satisfiesExactly(c -> assertThat(c).isInstanceOf(Claim.Replay.class),
                c -> assertThat(c).isInstanceOf(Claim.Acquired.class));
      }
    }

    @Test
    void aDeadEndpointFailsPromptlyAsStoreUnavailableThatChangedNothing() throws IOException {
      int closedPort = freePort();
      try (DynamoDbStore s = DynamoDbStore.builder(DynamoDbLocal.REGION)
          .endpoint(URI.create("http://127.0.0.1:" + closedPort))
          .credentials(DynamoDbLocal.credentials())
          .build()) {
        long started = System.nanoTime();

        // Connection refused on every attempt of the SDK: the request never left.
        assertThatThrownBy(() -> s.claim(request(newKey(), FP)))
            .isInstanceOfSatisfying(StoreUnavailableException.class,
                e -> assertThat(e.mayHaveBeenApplied()).isFalse())
            .hasMessageContaining("once_records");

        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
      }
    }

    @Test
    void aStoreBuiltWhileDynamoDbIsDownWorksOnceItIsUpWithoutRebuilding() throws IOException {
      int port = freePort();
      try (DynamoDbStore s = DynamoDbStore.builder(DynamoDbLocal.REGION)
          .endpoint(URI.create("http://127.0.0.1:" + port))
          .credentials(DynamoDbLocal.credentials())
          .table(DynamoDbLocal.uniqueTable("outage"))
          .build()) {
        IdempotencyKey key = newKey();
        ClaimRequest request = request(key, FP);
        List<ClaimRequest> batch = List.of(request(newKey(), FP), request(newKey(), FP));

        // Nothing listens: every call is StoreUnavailableException, as any later outage. Refused
        // connections sent nothing; only when the SDK's call timeout fired first (a loaded
        // machine: its retries outlast it) was an attempt in flight, whose fate is unknown.
        for (Runnable write : List.<Runnable>of(() -> s.claim(request), () -> s.claimAll(batch),
            () -> s.complete(key, 1, bytes(1), clock.instant(), RETENTION))) {
          assertThatThrownBy(write::run).isInstanceOfSatisfying(StoreUnavailableException.class,
              e -> assertThat(e.mayHaveBeenApplied()).as("%s", e).isEqualTo(callTimedOut(e)));
        }
        assertThatThrownBy(() -> s.find(key)).isInstanceOfSatisfying(
            StoreUnavailableException.class, e -> assertThat(e.mayHaveBeenApplied()).isFalse());

        try (DynamoDbLocal started = DynamoDbLocal.start(port)) {
          assertThat(s.createTable()).isTrue();
          Claim.Acquired acquired = acquire(s, key, request);
          assertThat(s.claimAll(batch)).allMatch(c -> c instanceof Claim.Acquired);
          s.complete(key, acquired.token(), bytes(1), clock.instant(), RETENTION);
          assertThat(s.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
        }
      }
    }
  }

  /**
   * Whether the SDK gave up because its whole call (all attempts) took too long, here or in an
   * exception suppressed by it (a batch's other key whose write timed out).
   */
  static boolean callTimedOut(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c.getClass().getSimpleName().startsWith("ApiCall")
          && c.getClass().getSimpleName().endsWith("TimeoutException")) {
        return true;
      }
      for (Throwable s : c.getSuppressed()) {
        if (callTimedOut(s)) {
          return true;
        }
      }
    }
    return false;
  }
}
