package dev.once.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Await;
import dev.once.testkit.MemoryEffects;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The README's example, compiled and run against the broker. */
class ReadmeExampleTest {

  /** The business side effect: charges a payment, deduplicated by the gateway on {@code key}. */
  interface Payments {
    void charge(String payment, String key) throws Exception;
  }

  /** A failure no retry can fix. */
  static final class CardDeclined extends Exception {
    private static final long serialVersionUID = 1L;
  }

  // --8<-- [start:consumer]
  static Subscription payments(Connection connection, String queue, IdempotencyStore store,
      Payments payments) throws IOException {
    Once once = Once.builder(store)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(CardDeclined.class))
        .build();
    return IdempotentRabbitConsumer
        .builder(once, (Delivery d, Attempt attempt) -> payments.charge(
            new String(d.getBody(), StandardCharsets.UTF_8), attempt.key())) // key for the gateway
        .queue(queue)                         // idempotency key: the message-id property
        .deadLetterExchange(queue + ".dlx")   // must exist, with a queue bound by the queue name
        .prefetch(100)                        // batch size: one claimAll per batch
        .build()
        .start(connection);                   // its own channel and thread; close() to stop
  }
  // --8<-- [end:consumer]

  @Test
  void theExampleChargesEachPaymentOnce() throws Exception {
    String queue = "payments-" + UUID.randomUUID().toString().substring(0, 8);
    MemoryEffects charges = new MemoryEffects();
    try (Connection connection = Rabbit.connect()) {
      try (Channel setup = connection.createChannel()) {
        setup.queueDeclare(queue, true, false, false, null);
        setup.exchangeDeclare(queue + ".dlx", "direct", true);
        setup.queueDeclare(queue + ".dlq", true, false, false, null);
        setup.queueBind(queue + ".dlq", queue + ".dlx", queue);
      }
      try (Subscription subscription = payments(connection, queue, new InMemoryStore(),
          (payment, key) -> charges.record(payment))) {
        Rabbit.publish(queue, "pay-1", "100 EUR to alice");
        Rabbit.publish(queue, "pay-1", "100 EUR to alice");
        Rabbit.publish(queue, "pay-2", "5 EUR to bob");
        Await.until("both charged", () -> charges.counts().size() == 2);
      }
      assertThat(charges.counts()).isEqualTo(Map.of("100 EUR to alice", 1, "5 EUR to bob", 1));
    } finally {
      Rabbit.delete(new Rabbit.Topology(queue, queue + ".dlx", queue + ".dlq"));
    }
  }
}
