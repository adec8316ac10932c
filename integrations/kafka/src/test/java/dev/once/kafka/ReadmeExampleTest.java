package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.Await;
import dev.once.testkit.MemoryEffects;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
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

  // --8<-- [start:loop]
  static IdempotentConsumerLoop<String, String> paymentsLoop(IdempotencyStore store,
      KafkaConsumer<String, String> kafkaConsumer, Producer<String, String> producer,
      Payments payments) {
    Once once = Once.builder(store)
        .lease(Duration.ofSeconds(30))
        .failurePolicy(FailurePolicy.retryAll().terminalOn(CardDeclined.class))
        .build();
    IdempotentConsumer<String, String> consumer = IdempotentConsumer
        .builder(once, (ConsumerRecord<String, String> record, Attempt attempt) ->
            payments.charge(record.value(), attempt.key()))   // stable key for the gateway
        .key(KeyDerivation.<String, String>header("idempotency-key")
            .orElse(KeyDerivation.sha256OfValue()))
        .deadLetters(KafkaDeadLetters.to(producer))          // payments → payments-dlt
        .config(BatchConfig.builder()                        // optional; these are the defaults
            .maxAttempts(5)
            .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(5))
            .build())
        .build();
    return consumer.loop(kafkaConsumer, List.of("payments"));  // enable.auto.commit=false
  }
  // --8<-- [end:loop]

  @Test
  void theExampleChargesEachPaymentOnce() throws Exception {
    String group = Broker.unique("payments");
    try {
      Broker.topic("payments", 1);
    } catch (IllegalStateException alreadyThere) {
      // another run of this JVM's tests created it
    }
    MemoryEffects charges = new MemoryEffects();
    ExecutorService thread = Executors.newSingleThreadExecutor();
    try (IdempotentConsumerLoop<String, String> loop = paymentsLoop(new InMemoryStore(),
        Broker.consumer(group), Broker.PRODUCER, (payment, key) -> charges.record(payment))) {
      thread.submit(loop);
      Broker.send("payments", 0, "pay-1", "100 EUR to alice");
      Broker.send("payments", 0, "pay-1", "100 EUR to alice");
      Broker.send("payments", 0, null, "5 EUR to bob");
      Broker.send("payments", 0, null, "5 EUR to bob");
      Await.until("all four committed", () -> Map.of(0, 4L).equals(Broker.committed(group)));
    } finally {
      thread.shutdown();
      thread.awaitTermination(10, TimeUnit.SECONDS);
    }
    assertThat(charges.counts()).isEqualTo(Map.of("100 EUR to alice", 1, "5 EUR to bob", 1));
  }
}
