package dev.once.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.nats.Broker.Topology;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Await;
import dev.once.testkit.MemoryEffects;
import io.nats.client.Connection;
import io.nats.client.Message;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The README's example, compiled and run against the server. */
class ReadmeExampleTest {

  /** The business side effect: ships an order, deduplicated downstream on {@code key}. */
  interface Shipping {
    void ship(String order, String key) throws Exception;
  }

  /** A failure no retry can fix. */
  static final class InvalidOrder extends Exception {
    private static final long serialVersionUID = 1L;
  }

  // --8<-- [start:consumer]
  static IdempotentNatsConsumer shippingConsumer(IdempotencyStore store, Connection connection,
      String stream, Shipping shipping) {
    Once once = Once.builder(store)
        .lease(Duration.ofSeconds(30))
        .failurePolicy(FailurePolicy.retryAll().terminalOn(InvalidOrder.class))
        .build();
    return IdempotentNatsConsumer
        .builder(once, (Message message, Attempt attempt) -> shipping.ship(
            new String(message.getData(), StandardCharsets.UTF_8), attempt.key()))
        .connection(connection)
        .stream(stream)                      // e.g. "ORDERS"
        .consumer("worker")                  // durable pull consumer, AckPolicy.Explicit
        .key(KeyDerivation.header("Nats-Msg-Id").orElse(KeyDerivation.sha256OfData()))
        .config(BatchConfig.builder()
            .maxAttempts(5)                  // then dead-lettered to dlq.<subject>
            .build())
        .build();
  }
  // --8<-- [end:consumer]

  @Test
  void theExampleShipsEachOrderOnce() throws Exception {
    Topology t = Broker.create("readme", Duration.ofSeconds(30), Duration.ofMinutes(2));
    MemoryEffects shipped = new MemoryEffects();
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try (Connection connection = Broker.connect();
        IdempotentNatsConsumer consumer = shippingConsumer(new InMemoryStore(), connection,
            t.stream(), (order, key) -> shipped.record(order))) {
      thread.submit(consumer);
      Broker.publish(t.subject(), "order 1: 2 books", "Nats-Msg-Id", "order-1");
      Broker.publish(t.subject(), "order 2: 1 lamp"); // no id: keyed by its SHA-256
      Broker.publish(t.subject(), "order 2: 1 lamp");
      Await.until("all three settled", () -> Broker.allSettled(t)
          && Broker.info(t).getDelivered().getStreamSequence() == 3);
    } finally {
      thread.shutdown();
      thread.awaitTermination(10, TimeUnit.SECONDS);
      Broker.delete(t);
    }
    assertThat(shipped.counts()).isEqualTo(Map.of("order 1: 2 books", 1, "order 2: 1 lamp", 1));
  }
}
