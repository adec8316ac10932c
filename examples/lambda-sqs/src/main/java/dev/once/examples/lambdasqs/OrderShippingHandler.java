package dev.once.examples.lambdasqs;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.SQSBatchResponse;
import com.amazonaws.services.lambda.runtime.events.SQSEvent;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.FailurePolicy;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.dynamodb.DynamoDbStore;
import dev.once.jackson.CanonicalJson;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import software.amazon.awssdk.regions.Region;

/**
 * An AWS Lambda handler for an SQS queue of orders: ships each order once, however often SQS
 * delivers its message, with Once on DynamoDB. Each event batch is one run of core's batch engine
 * ({@link BatchExecutor#process}), and the records that are not final become the partial batch
 * response.
 *
 * <ul>
 *   <li><b>Key</b>: the message attribute {@value #KEY_ATTRIBUTE} if the producer set one, else
 *       the body's {@code orderId}. Never the SQS message id: a producer that sends again after a
 *       timeout makes a new message id for the same order. A message with neither (or not JSON) is
 *       reported as failed, never shipped nor stored; the queue's redrive policy moves it to the
 *       dead-letter queue.
 *   <li><b>Fingerprint</b>: the canonical JSON of the body (field order does not matter). The same
 *       key with another body is misuse: reported as failed, never shipped.
 *   <li><b>Partial batch response</b> (enable {@code ReportBatchItemFailures} on the event source
 *       mapping): the records that are not final are listed in {@code batchItemFailures}:
 *       retryable failures, records whose key another invocation is still working on, reused or
 *       missing keys. Shipped, replayed and rejected orders are final and deleted. On a FIFO queue
 *       the batch is one ordering group: once a record is not final, every later record of the
 *       batch is listed without being run (AWS's advice for FIFO partial batch responses).
 *   <li><b>Rejected orders</b> ({@link Shipping.OrderRejectedException}, terminal): the failure is
 *       stored in the Once table (that record, and the log line, are the dead letter), the message
 *       is deleted, and duplicates replay the rejection without calling shipping again.
 *   <li><b>After shipping</b>: the engine stores the outcome before the batch response is built;
 *       whatever fails later (building the response, logging, the invocation itself) at most makes
 *       SQS deliver the message again, and the redelivery replays without shipping.
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
  /** The ordering group of every record of a FIFO batch. */
  private static final String FIFO_BATCH = "fifo-batch";

  private static final System.Logger LOG =
      System.getLogger(OrderShippingHandler.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  private final BatchExecutor<SQSEvent.SQSMessage> executor;

  /** Lambda's entry point: a store and Once from the environment, built once per container. */
  public OrderShippingHandler() {
    this(onceFromEnvironment(System.getenv()), new LoggingShipping());
  }

  /** A handler over {@code once}; tests and other wirings use this. */
  public OrderShippingHandler(Once once, Shipping shipping) {
    Objects.requireNonNull(once, "once");
    Objects.requireNonNull(shipping, "shipping");
    this.executor = BatchExecutor.<SQSEvent.SQSMessage>builder(once, (message, attempt) -> {
          Order order = JSON.readValue(message.getBody(), Order.class);
          ShipmentReceipt receipt = shipping.ship(order, attempt.key());
          LOG.log(System.Logger.Level.INFO, "message {0}: order {1} shipped, tracking {2}",
              message.getMessageId(), receipt.orderId(), receipt.trackingNumber());
        })
        .scope(SCOPE)
        .key(OrderShippingHandler::keyOf)
        .fingerprint(message -> CanonicalJson.fingerprint(body(message)))
        .deadLetters(OrderShippingHandler::deadLetter)
        .orderedBy(message -> isFifo(message) ? FIFO_BATCH : null)
        .messageId(SQSEvent.SQSMessage::getMessageId)
        .build();
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
    BatchOutcome<SQSEvent.SQSMessage> outcome = executor.process(event.getRecords());
    List<SQSBatchResponse.BatchItemFailure> failures = new ArrayList<>();
    for (ItemResult<SQSEvent.SQSMessage> item : outcome.items()) {
      if (!item.isFinal()) {
        // SQS delivers it again after the visibility timeout; a redelivery of anything whose
        // outcome is stored replays, so listing too much never ships twice.
        LOG.log(System.Logger.Level.WARNING, "message {0} will be retried: {1}{2}",
            item.message().getMessageId(), item.status(),
            item.failure() == null ? "" : " (" + item.failure() + ")");
        failures.add(new SQSBatchResponse.BatchItemFailure(item.message().getMessageId()));
      }
    }
    return new SQSBatchResponse(failures);
  }

  /**
   * A rejected order's dead letter is its stored failure (and this log line): accepted, so the
   * failure is stored and the message deleted. Anything else given up on (a missing or reused key,
   * retries used up) is refused, so it is listed and the queue's redrive policy moves it to the
   * dead-letter queue after {@code maxReceiveCount} receives.
   */
  private static void deadLetter(DeadLetter<SQSEvent.SQSMessage> letter) {
    if (letter.reason() != DeadLetter.Reason.TERMINAL_FAILURE) {
      throw new IllegalStateException(letter.reason() + ": left to the queue's redrive policy");
    }
    LOG.log(System.Logger.Level.WARNING, "message {0}: order rejected ({1}); stored, dropped",
        letter.message().getMessageId(), letter.exceptionMessage());
  }

  private static JsonNode body(SQSEvent.SQSMessage message) {
    try {
      return JSON.readTree(message.getBody());
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("message " + message.getMessageId() + " is not JSON", e);
    }
  }

  /** The attribute, else the body's orderId; null (no key: never a shared "null" key) if none. */
  private static String keyOf(SQSEvent.SQSMessage message) {
    Map<String, SQSEvent.MessageAttribute> attributes = message.getMessageAttributes();
    SQSEvent.MessageAttribute attribute = attributes == null ? null
        : attributes.get(KEY_ATTRIBUTE);
    if (attribute != null && attribute.getStringValue() != null) {
      return attribute.getStringValue();
    }
    JsonNode orderId = body(message).get("orderId");
    return orderId == null || !orderId.isTextual() ? null : orderId.asText();
  }

  private static boolean isFifo(SQSEvent.SQSMessage message) {
    String arn = message.getEventSourceArn();
    return arn != null && arn.endsWith(".fifo");
  }
}
