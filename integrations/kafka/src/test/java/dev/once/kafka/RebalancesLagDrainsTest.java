package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.testkit.Await;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 10, on the real broker: with consumers joining and leaving while records
 * flow, commits are refused by rebalances in progress. Offsets so refused were dropped, and with
 * the cooperative-sticky assignor (the partition stays with the consumer, which has read past
 * them) nothing committed them again: the group's lag stayed. Now they are kept and committed at
 * the next chance, on both kinds of assignor: the lag drains to 0, and every record has one effect.
 */
class RebalancesLagDrainsTest {

  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private final Once once = Once.builder(new InMemoryStore()).build();

  @AfterEach
  void tearDown() throws InterruptedException {
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
  }

  @Test
  void theLagDrainsUnderRebalancesWithTheCooperativeStickyAssignor() throws Exception {
    drainsUnderRebalances(CooperativeStickyAssignor.class.getName());
  }

  @Test
  void theLagDrainsUnderRebalancesWithTheEagerRangeAssignor() throws Exception {
    drainsUnderRebalances(RangeAssignor.class.getName());
  }

  private void drainsUnderRebalances(String assignor) throws Exception {
    String topic = Broker.topic(Broker.unique("rebalance"), 4);
    String group = Broker.unique("group");
    IdempotentConsumer<String, String> consumer = IdempotentConsumer.<String, String>builder(once,
        (record, attempt) -> {
          effects.computeIfAbsent(record.value(), v -> new AtomicInteger()).incrementAndGet();
          Thread.sleep(10); // batches take time, so rebalances meet work and commits
        }).deadLetters(letter -> {}).pollTimeout(Duration.ofMillis(50)).build();
    IdempotentConsumerLoop<String, String> steady = consumer.loop(consumer(group, assignor),
        List.of(topic));
    threads.submit(steady);
    int sent = 0;
    for (int round = 0; round < 4; round++) {
      for (int i = 0; i < 100; i++, sent++) {
        Broker.send(topic, sent % 4, "k" + sent, "e" + sent);
      }
      // A second consumer joins, takes partitions over, and leaves: two rebalances a round.
      IdempotentConsumerLoop<String, String> visitor = consumer.loop(consumer(group, assignor),
          List.of(topic));
      threads.submit(visitor);
      int target = sent;
      Await.until("round " + round + " handled", () -> effects.size() >= target - 50,
          () -> String.valueOf(effects.size()));
      visitor.close();
    }
    int total = sent;
    Await.until("every record handled", () -> effects.size() == total,
        () -> String.valueOf(effects.size()));
    Map<Integer, Long> end = new HashMap<>();
    for (int p = 0; p < 4; p++) {
      end.put(p, 100L);
    }
    Await.until("the lag drained to 0", () -> end.equals(Broker.committed(group)),
        () -> Broker.committed(group).toString());
    steady.close();
    assertThat(effects).hasSize(total).allSatisfy((e, n) -> assertThat(n).hasValue(1));
  }

  private static KafkaConsumer<String, String> consumer(String group, String assignor) {
    Properties p = Broker.consumerProperties(group);
    p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "25");
    return new KafkaConsumer<>(p);
  }
}
