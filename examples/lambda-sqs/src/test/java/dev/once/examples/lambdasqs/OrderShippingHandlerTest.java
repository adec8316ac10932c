package dev.once.examples.lambdasqs;

import static org.assertj.core.api.Assertions.assertThat;

import com.amazonaws.services.lambda.runtime.events.SQSBatchResponse;
import com.amazonaws.services.lambda.runtime.events.SQSEvent;
import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.dynamodb.DynamoDbLocal;
import dev.once.dynamodb.DynamoDbStore;
import dev.once.spi.ClaimRequest;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The handler against DynamoDB Local over HTTP, in this JVM: no AWS account. SQS is played by
 * the test: it builds the batches Lambda would pass and redelivers what the handler reports failed.
 */
class OrderShippingHandlerTest {

  private static final DynamoDbStore STORE = DynamoDbLocal.get().newStore("lambda-sqs");
  private static final String QUEUE = "arn:aws:sqs:us-east-1:123456789012:orders";

  private final ManualClock clock = new ManualClock();
  private final RecordingShipping shipping = new RecordingShipping();
  private final Once once = Once.builder(STORE)
      .clock(clock)
      .lease(Duration.ofMinutes(5))
      .failurePolicy(FailurePolicy.retryAll().terminalOn(Shipping.OrderRejectedException.class))
      .build();
  private final OrderShippingHandler handler = new OrderShippingHandler(once, shipping);
  // Order ids unique to this test: the table is shared.
  private final String run = UUID.randomUUID().toString().substring(0, 8);
  private int messages;

  @AfterAll
  static void close() {
    STORE.close();
  }

  private String order(String id) {
    return order(id, "book-42", 1);
  }

  private String order(String id, String sku, int quantity) {
    return "{\"orderId\":\"" + run + "-" + id + "\",\"sku\":\"" + sku + "\",\"quantity\":"
        + quantity + "}";
  }

  private SQSEvent.SQSMessage message(String body) {
    SQSEvent.SQSMessage m = new SQSEvent.SQSMessage();
    m.setMessageId("msg-" + ++messages);
    m.setBody(body);
    m.setEventSourceArn(QUEUE);
    m.setMessageAttributes(new HashMap<>());
    return m;
  }

  private SQSEvent.SQSMessage message(String body, String idempotencyKey) {
    SQSEvent.SQSMessage m = message(body);
    SQSEvent.MessageAttribute key = new SQSEvent.MessageAttribute();
    key.setDataType("String");
    key.setStringValue(run + "-" + idempotencyKey);
    m.getMessageAttributes().put(OrderShippingHandler.KEY_ATTRIBUTE, key);
    return m;
  }

  private static SQSEvent batch(SQSEvent.SQSMessage... messages) {
    SQSEvent event = new SQSEvent();
    event.setRecords(Arrays.asList(messages));
    return event;
  }

  private static List<String> failed(SQSBatchResponse response) {
    return response.getBatchItemFailures().stream()
        .map(SQSBatchResponse.BatchItemFailure::getItemIdentifier).toList();
  }

  private IdempotencyRecord record(String key) {
    return STORE.find(IdempotencyKey.of(OrderShippingHandler.SCOPE, run + "-" + key))
        .orElseThrow();
  }

  // -----------------------------------------------------------------------------------------------

  @Test
  void duplicatesInOneBatchShipOnce() {
    SQSEvent event = batch(message(order("a")), message(order("a")), message(order("b")));

    SQSBatchResponse response = handler.handleRequest(event, null);

    assertThat(failed(response)).isEmpty();
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a", run + "-b");
    assertThat(record("a").status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void duplicatesAcrossBatchesShipOnce() {
    handler.handleRequest(batch(message(order("a"))), null);
    clock.advance(Duration.ofHours(1));

    SQSBatchResponse second = handler.handleRequest(
        batch(message(order("a")), message(order("c"))), null);

    assertThat(failed(second)).isEmpty();
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a", run + "-c");
  }

  @Test
  void aFailingRecordIsReportedAloneAndSucceedsWhenRedelivered() {
    shipping.failNextCallFor(run + "-b");
    SQSEvent.SQSMessage a = message(order("a"));
    SQSEvent.SQSMessage b = message(order("b"));
    SQSEvent.SQSMessage c = message(order("c"));

    SQSBatchResponse first = handler.handleRequest(batch(a, b, c), null);

    assertThat(failed(first)).containsExactly(b.getMessageId());
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a", run + "-c");
    IdempotencyRecord failedRecord = record("b");
    assertThat(failedRecord.status()).isEqualTo(Status.FAILED);
    assertThat(failedRecord.lastError()).contains("shipping service unavailable");

    // SQS delivers b again after the visibility timeout (same message id), with a new order.
    clock.advance(Duration.ofSeconds(30));
    SQSBatchResponse second = handler.handleRequest(batch(b, message(order("d"))), null);

    assertThat(failed(second)).isEmpty();
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a", run + "-c", run + "-b",
        run + "-d");
    IdempotencyRecord shipped = record("b");
    assertThat(shipped.status()).isEqualTo(Status.COMPLETED);
    assertThat(shipped.attempts()).isEqualTo(2);
    assertThat(shipped.token()).isEqualTo(failedRecord.token() + 1);
  }

  @Test
  void theShippingServiceGetsAStableKeyPerOrder() {
    shipping.failNextCallFor(run + "-a");
    SQSEvent.SQSMessage a = message(order("a"));
    handler.handleRequest(batch(a), null);

    handler.handleRequest(batch(a), null);

    assertThat(shipping.keys()).hasSize(2).containsOnly(
        IdempotencyKey.of(OrderShippingHandler.SCOPE, run + "-a").downstreamKey());
  }

  @Test
  void theMessageAttributeKeysTheRecordAndFieldOrderDoesNotMatter() {
    String body = order("a");
    String reordered = "{\"quantity\":1,\"sku\":\"book-42\",\"orderId\":\"" + run + "-a\"}";
    SQSEvent.SQSMessage first = message(body, "request-1");
    SQSEvent.SQSMessage sameRequest = message(reordered, "request-1");
    SQSEvent.SQSMessage reusedKey = message(order("a", "book-42", 5), "request-1");
    SQSEvent.SQSMessage otherRequest = message(body, "request-2");

    SQSBatchResponse response = handler.handleRequest(
        batch(first, sameRequest, reusedKey, otherRequest), null);

    assertThat(failed(response)).as("the same key with another body is never shipped")
        .containsExactly(reusedKey.getMessageId());
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a", run + "-a");
    assertThat(record("request-1").status()).isEqualTo(Status.COMPLETED);
    assertThat(record("request-2").status()).isEqualTo(Status.COMPLETED);
  }

  @Test
  void aPayloadBoundTooSmallForAReceiptNeverShipsTheOrderAgainNorBringsItBack() {
    // The fault: a payload bound (32 bytes) smaller than the receipt's JSON (about 50 bytes), as a
    // large receipt would be against DynamoDB's item limit. The engine stores the outcome without
    // the receipt, so nothing after shipping can fail on its size.
    Once bounded = Once.builder(STORE).clock(clock).maxPayloadBytes(32)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(Shipping.OrderRejectedException.class))
        .build();
    OrderShippingHandler small = new OrderShippingHandler(bounded, shipping);
    SQSEvent.SQSMessage a = message(order("a"));
    SQSEvent.SQSMessage resent = message(order("a")); // the producer sent it again

    SQSBatchResponse first = small.handleRequest(batch(a, resent), null);
    clock.advance(Duration.ofMinutes(10));
    SQSBatchResponse redelivered = small.handleRequest(batch(a), null);

    assertThat(failed(first)).isEmpty();
    assertThat(failed(redelivered)).isEmpty();
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a");
    IdempotencyRecord record = record("a");
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.attempts()).isEqualTo(1);
    assertThat(record.outcome().isNotStored()).isFalse();
  }

  @Test
  void aRecordInProgressElsewhereIsReportedForLater() {
    IdempotencyKey key = IdempotencyKey.of(OrderShippingHandler.SCOPE, run + "-a");
    String body = order("a");
    // Another invocation holds the key right now.
    STORE.claim(new ClaimRequest(key, dev.once.jackson.CanonicalJson.fingerprint(body),
        clock.instant(), Duration.ofMinutes(5), Duration.ofHours(24)));
    SQSEvent.SQSMessage duplicate = message(body);

    SQSBatchResponse response = handler.handleRequest(batch(duplicate, message(order("b"))), null);

    assertThat(failed(response)).containsExactly(duplicate.getMessageId());
    assertThat(shipping.shippedOrders()).containsExactly(run + "-b");
  }

  @Test
  void aRejectedOrderIsStoredAndNeverRetried() {
    SQSEvent.SQSMessage bad = message(order("a", "book-42", 0));

    SQSBatchResponse first = handler.handleRequest(batch(bad), null);
    SQSBatchResponse redelivered = handler.handleRequest(batch(bad), null);

    assertThat(failed(first)).isEmpty();
    assertThat(failed(redelivered)).isEmpty();
    assertThat(shipping.calls()).isEqualTo(1);
    assertThat(record("a").outcome().failureType())
        .isEqualTo(Shipping.OrderRejectedException.class.getName());
  }

  @Test
  void aMessageWithoutAKeyIsReportedAndNothingIsStored() {
    SQSEvent.SQSMessage noKey = message("{\"sku\":\"book-42\",\"quantity\":1}");
    SQSEvent.SQSMessage notJson = message("not json");

    SQSBatchResponse response = handler.handleRequest(batch(noKey, notJson), null);

    assertThat(failed(response)).containsExactly(noKey.getMessageId(), notJson.getMessageId());
    assertThat(shipping.calls()).isZero();
    assertThat(STORE.find(IdempotencyKey.of(OrderShippingHandler.SCOPE, "null"))).isEmpty();
  }

  @Test
  void onAFifoQueueEverythingAfterAFailureIsReportedToKeepTheOrder() {
    shipping.failNextCallFor(run + "-b");
    List<SQSEvent.SQSMessage> messages = new ArrayList<>();
    for (String id : List.of("a", "b", "c")) {
      SQSEvent.SQSMessage m = message(order(id));
      m.setEventSourceArn(QUEUE + ".fifo");
      messages.add(m);
    }

    SQSBatchResponse response = handler.handleRequest(
        batch(messages.toArray(SQSEvent.SQSMessage[]::new)), null);

    assertThat(failed(response)).containsExactly(messages.get(1).getMessageId(),
        messages.get(2).getMessageId());
    assertThat(shipping.shippedOrders()).containsExactly(run + "-a");
  }

  @Test
  void theEnvironmentConfiguresAStoreForDynamoDbLocal() {
    Once fromEnv = OrderShippingHandler.onceFromEnvironment(Map.of(
        "AWS_REGION", "eu-west-1",
        "DYNAMODB_ENDPOINT", DynamoDbLocal.get().endpoint().toString(),
        "ONCE_TABLE", STORE.table(),
        "ONCE_LEASE", "PT1M"));

    assertThat(fromEnv.config().lease()).isEqualTo(Duration.ofMinutes(1));
    assertThat(fromEnv.store()).isInstanceOf(DynamoDbStore.class)
        .hasToString("DynamoDbStore[" + STORE.table() + "]");
    fromEnv.store().close();
  }

  /** The shipping service as the test sees it: records calls; can fail the next call for an order. */
  private static final class RecordingShipping implements Shipping {
    private final List<String> shipped = new CopyOnWriteArrayList<>();
    private final List<String> keys = new CopyOnWriteArrayList<>();
    private final List<String> failNext = new CopyOnWriteArrayList<>();
    private int calls;

    void failNextCallFor(String orderId) {
      failNext.add(orderId);
    }

    @Override
    public synchronized ShipmentReceipt ship(Order order, String idempotencyKey) {
      calls++;
      keys.add(idempotencyKey);
      if (order.quantity() <= 0) {
        throw new OrderRejectedException("quantity must be positive");
      }
      if (failNext.remove(order.orderId())) {
        throw new IllegalStateException("shipping service unavailable");
      }
      shipped.add(order.orderId());
      return new ShipmentReceipt(order.orderId(), "TRK-" + shipped.size());
    }

    List<String> shippedOrders() {
      return List.copyOf(shipped);
    }

    List<String> keys() {
      return List.copyOf(keys);
    }

    synchronized int calls() {
      return calls;
    }
  }
}
