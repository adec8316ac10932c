package dev.once.examples.lambdasqs;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.SQSBatchResponse;
import com.amazonaws.services.lambda.runtime.events.SQSEvent;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.dynamodb.DynamoDbStore;
import dev.once.jackson.CanonicalJson;
import dev.once.jackson.JsonCodec;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import software.amazon.awssdk.regions.Region;

/**
 * An AWS Lambda handler for an SQS queue of orders: ships each order once, however often SQS
 * delivers its message, with Once on DynamoDB.
 *
 * <ul>
 *   <li><b>Key</b>: the message attribute {@value #KEY_ATTRIBUTE} if the producer set one, else
 *       the body's {@code orderId}. Never the SQS message id: a producer that sends again after a
 *       timeout makes a new message id for the same order. A message with neither is reported as
 *       failed (never hashed into a shared "null" key); the queue's redrive policy moves it to the
 *       dead-letter queue.
 *   <li><b>Fingerprint</b>: the canonical JSON of the body (field order does not matter). The same
 *       key with another body is misuse: reported as failed, never shipped.
 *   <li><b>Partial batch response</b> (enable {@code ReportBatchItemFailures} on the event source
 *       mapping): only the records that must come back are listed in {@code batchItemFailures}:
 *       retryable failures, and records whose key another invocation is still working on. Replays
 *       and terminal failures are done and deleted from the queue. On a FIFO queue, once a record
 *       fails, every later record of the batch is reported too, so that order is kept.
 *   <li><b>After shipping</b>: Once stores the receipt before {@code execute} returns; a receipt
 *       that cannot be stored (too large, not encodable) completes the key with a marker instead,
 *       and duplicates get {@link OutcomeNotStoredException}, which is done, not failed. Whatever
 *       fails later (building the response, logging, the invocation itself) at most makes SQS
 *       deliver the message again, and the redelivery replays without shipping.
 *   <li><b>Lease</b> ({@code ONCE_LEASE}, default 5 minutes): set it at least to the function's
 *       timeout, so a duplicate delivered while the first invocation still runs is answered "in
 *       progress" instead of running in parallel; a crashed invocation's claim is taken over
 *       (token + 1) by the first redelivery after the lease.
 * </ul>
 *
 * Environment (Lambda sets {@code AWS_REGION}): {@code ONCE_TABLE} (default once_records),
 * {@code ONCE_LEASE} and {@code ONCE_RETENTION} (ISO-8601 durations), {@code DYNAMODB_ENDPOINT}
 * (for DynamoDB Local).
 */
public final class OrderShippingHandler implements RequestHandler<SQSEvent, SQSBatchResponse> {

  /** The message attribute carrying the producer's idempotency key. */
  public static final String KEY_ATTRIBUTE = "idempotency-key";
  /** The scope of this consumer's keys in the table. */
  public static final String SCOPE = "orders.ship";

  private static final System.Logger LOG =
      System.getLogger(OrderShippingHandler.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonCodec<ShipmentReceipt> RECEIPTS = JsonCodec.of(ShipmentReceipt.class);

  private final Once once;
  private final Shipping shipping;

  /** Lambda's entry point: a store and Once from the environment, built once per container. */
  public OrderShippingHandler() {
    this(onceFromEnvironment(System.getenv()), new LoggingShipping());
  }

  /** A handler over {@code once}; tests and other wirings use this. */
  public OrderShippingHandler(Once once, Shipping shipping) {
    this.once = Objects.requireNonNull(once, "once");
    this.shipping = Objects.requireNonNull(shipping, "shipping");
  }

  /**
   * Once over a DynamoDB store configured by {@code env}; rejected orders are terminal (stored and
   * replayed), everything else retryable.
   */
  public static Once onceFromEnvironment(Map<String, String> env) {
    DynamoDbStore.Builder store = DynamoDbStore.builder(Region.of(env.getOrDefault("AWS_REGION",
        "us-east-1")));
    store.table(env.getOrDefault("ONCE_TABLE", DynamoDbStore.DEFAULT_TABLE));
    String endpoint = env.get("DYNAMODB_ENDPOINT");
    if (endpoint != null && !endpoint.isBlank()) {
      store.endpoint(URI.create(endpoint));
    }
    return Once.builder(store.build())
        .lease(Duration.parse(env.getOrDefault("ONCE_LEASE", "PT5M")))
        .retention(Duration.parse(env.getOrDefault("ONCE_RETENTION", "PT24H")))
        .failurePolicy(FailurePolicy.retryAll()
            .terminalOn(Shipping.OrderRejectedException.class))
        .build();
  }

  /** Handles a batch; {@code context} is not used. */
  @Override
  public SQSBatchResponse handleRequest(SQSEvent event, Context context) {
    List<SQSBatchResponse.BatchItemFailure> failures = new ArrayList<>();
    boolean failTheRest = false;
    for (SQSEvent.SQSMessage message : event.getRecords()) {
      if (failTheRest || !handle(message)) {
        failures.add(new SQSBatchResponse.BatchItemFailure(message.getMessageId()));
        failTheRest = isFifo(message);
      }
    }
    return new SQSBatchResponse(failures);
  }

  /** @return true if the message is done (shipped now or before, or rejected for good) */
  private boolean handle(SQSEvent.SQSMessage message) {
    try {
      JsonNode body = JSON.readTree(message.getBody());
      IdempotencyKey key = IdempotencyKey.of(SCOPE, keyOf(message, body));
      Fingerprint fingerprint = CanonicalJson.fingerprint(body);
      Order order = JSON.treeToValue(body, Order.class);
      once.execute(key, fingerprint, RECEIPTS, attempt -> shipping.ship(order, attempt.key()));
      return true;
    } catch (ReplayedFailureException e) {
      LOG.log(System.Logger.Level.INFO, "message {0}: order was rejected before ({1}); dropped",
          message.getMessageId(), e.failureMessage());
      return true;
    } catch (OutcomeNotStoredException e) {
      // Shipped before, but its receipt could not be stored (too large, or not encodable): the
      // order is done. Reporting it would only bring it back until the DLQ took it.
      LOG.log(System.Logger.Level.WARNING, "message {0}: order shipped before, receipt not kept"
          + " ({1}); dropped", message.getMessageId(), e.reason());
      return true;
    } catch (Shipping.OrderRejectedException e) {
      LOG.log(System.Logger.Level.WARNING, "message {0}: order rejected ({1}); stored, dropped",
          message.getMessageId(), e.getMessage());
      return true;
    } catch (JsonProcessingException | InvalidKeyException e) {
      LOG.log(System.Logger.Level.ERROR, "message {0} is malformed: {1}", message.getMessageId(),
          e.getMessage());
      return false;
    } catch (RuntimeException e) {
      // Retryable (the record is FAILED, the next delivery runs again), in progress elsewhere,
      // a reused key, or the store unavailable: SQS delivers it again after the visibility timeout.
      // Never a failure after shipping returned: Once stores the receipt (or, if it cannot be
      // stored, a marker) before execute returns, so a redelivery replays and ships nothing.
      LOG.log(System.Logger.Level.WARNING, "message {0} will be retried: {1}",
          message.getMessageId(), e.toString());
      return false;
    }
  }

  private static String keyOf(SQSEvent.SQSMessage message, JsonNode body) {
    Map<String, SQSEvent.MessageAttribute> attributes = message.getMessageAttributes();
    SQSEvent.MessageAttribute attribute = attributes == null ? null
        : attributes.get(KEY_ATTRIBUTE);
    if (attribute != null && attribute.getStringValue() != null) {
      return attribute.getStringValue();
    }
    JsonNode orderId = body.get("orderId");
    // null (no key at all) is refused by IdempotencyKey: never a shared "null" key.
    return orderId == null || !orderId.isTextual() ? null : orderId.asText();
  }

  private static boolean isFifo(SQSEvent.SQSMessage message) {
    String arn = message.getEventSourceArn();
    return arn != null && arn.endsWith(".fifo");
  }
}
