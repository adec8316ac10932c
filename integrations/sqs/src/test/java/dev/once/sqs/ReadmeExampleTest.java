package dev.once.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.Scheduler;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Await;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;

/** The README's example, compiled and run against the SQS-compatible server. */
class ReadmeExampleTest {

  /** The business side effect: ships an order, deduplicated by the carrier on {@code key}. */
  interface Shipping {
    void ship(String order, String key) throws Exception;
  }

  /** A failure no retry can fix. */
  static final class OrderRejected extends Exception {
    private static final long serialVersionUID = 1L;
  }

  // --8<-- [start:consumer]
  static IdempotentSqsConsumer ordersConsumer(IdempotencyStore store, SqsClient sqs,
      String queueUrl, String dlqUrl, ScheduledExecutorService timers, Shipping shipping) {
    Once once = Once.builder(store)
        .heartbeat(Scheduler.of(timers))                     // leases extended while work runs
        .failurePolicy(FailurePolicy.retryAll().terminalOn(OrderRejected.class))
        .build();
    return IdempotentSqsConsumer
        .builder(once, sqs, queueUrl, (Message message, Attempt attempt) ->
            shipping.ship(message.body(), attempt.key()))    // stable key for the carrier
        .deadLetterQueue(dlqUrl)                             // rejected, retries used up
        .config(IdempotentSqsConsumer.Builder.DEFAULT_CONFIG.toBuilder()
            .maxAttempts(5)                                  // then dead-lettered
            .build())
        .build();                                            // run() it on a thread of its own
  }
  // --8<-- [end:consumer]

  @Test
  void theExampleShipsEachOrderOnce() throws Exception {
    String queue = ElasticMq.queue("orders");
    String dlq = ElasticMq.queue("orders-dlq");
    List<String> shipped = new CopyOnWriteArrayList<>();
    ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();
    IdempotentSqsConsumer consumer = ordersConsumer(new InMemoryStore(), ElasticMq.SQS, queue,
        dlq, timers, (order, key) -> shipped.add(order));
    Thread thread = new Thread(consumer, "orders");
    thread.start();
    try {
      ElasticMq.send(queue, "o-1", "order o-1");
      ElasticMq.send(queue, "o-1", "order o-1"); // a producer retry
      ElasticMq.send(queue, "order o-2", Map.of()); // no key attribute: the message id
      Await.until("both orders shipped and every message deleted", () -> shipped.size() >= 2
          && ElasticMq.messagesIn(queue) == 0, shipped::toString);
    } finally {
      consumer.stop();
      // A stop takes effect when the long poll in progress returns (20 s by default, the example's
      // setting): a message makes it return now. It is released, not run.
      ElasticMq.send(queue, "o-3", "order o-3");
      consumer.close();
      timers.shutdownNow();
    }
    thread.join(Duration.ofSeconds(30).toMillis());
    assertThat(shipped).containsExactlyInAnyOrder("order o-1", "order o-2");
    assertThat(consumer.scope()).isEqualTo(queue.substring(queue.lastIndexOf('/') + 1));
  }
}
