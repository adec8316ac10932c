package dev.once.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.MessageHandler;
import dev.once.testkit.Await;
import dev.once.testkit.ManualClock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenarios 1 and 10, against the real broker: a stop (or an error) in the middle of a
 * poll batch must not let any commit pass a record that did not run, and offsets a rebalance kept
 * from being committed must be committed at the next chance rather than dropped.
 */
class StopsAndCommitFailuresTest {

  private final ManualClock clock = new ManualClock(Instant.now());
  private final Once once = Once.builder(new InMemoryStore()).clock(clock).build();
  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void tearDown() throws InterruptedException {
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
  }

  private void effect(ConsumerRecord<String, String> record) {
    effects.computeIfAbsent(record.value(), v -> new AtomicInteger()).incrementAndGet();
  }

  private IdempotentConsumer.Builder<String, String> consumer(
      MessageHandler<ConsumerRecord<String, String>> h) {
    return IdempotentConsumer.builder(once, h).deadLetters(letter -> {})
        .config(IdempotentConsumerContract.retries().build())
        .pollTimeout(Duration.ofMillis(100));
  }

  private static String fiveRecords(String prefix) {
    String topic = Broker.topic(Broker.unique(prefix), 1);
    for (int i = 1; i <= 5; i++) {
      Broker.send(topic, 0, "k" + i, "e" + i);
    }
    return topic;
  }

  @Test
  void stopFromTheFirstHandlerCommitsNoRecordThatDidNotRun() throws Exception {
    String topic = fiveRecords("stop");
    String group = Broker.unique("group");
    AtomicReference<IdempotentConsumerLoop<String, String>> loop = new AtomicReference<>();
    IdempotentConsumer<String, String> stopping = consumer((record, attempt) -> {
      effect(record);
      loop.get().stop(); // a shutdown hook in a rolling deploy
    }).build();
    loop.set(stopping.loop(ConsumerViews.autoCommitting(Broker.consumerProperties(group)),
        List.of(topic)));
    threads.submit(loop.get()).get(30, TimeUnit.SECONDS);

    assertThat(Broker.committed(group)).isEqualTo(Map.of(0, 1L));

    theNextConsumerFinishesEveryRecordOnce(group, topic);
  }

  @Test
  void anErrorOutOfAHandlerMidBatchCommitsNoRecordThatDidNotRun() throws Exception {
    String topic = fiveRecords("error");
    String group = Broker.unique("group");
    IdempotentConsumer<String, String> dying = consumer((record, attempt) -> {
      if (record.value().equals("e3")) {
        throw new StackOverflowError("simulated death of the process");
      }
      effect(record);
    }).build();
    Future<?> run = threads.submit(dying.loop(
        ConsumerViews.autoCommitting(Broker.consumerProperties(group)), List.of(topic)));
    assertThatThrownBy(() -> run.get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(StackOverflowError.class);

    assertThat(Broker.committed(group).getOrDefault(0, 0L)).isLessThanOrEqualTo(2L);
    // The dead process's claim on e3 is IN_PROGRESS until its lease passes.
    clock.advance(Once.Builder.DEFAULT_LEASE.plusSeconds(1));

    theNextConsumerFinishesEveryRecordOnce(group, topic);
  }

  /** A consumer of the group after the first: the five records end handled once, committed. */
  private void theNextConsumerFinishesEveryRecordOnce(String group, String topic) {
    IdempotentConsumerLoop<String, String> next = consumer((r, a) -> effect(r)).build()
        .loop(Broker.consumer(group), List.of(topic));
    threads.submit(next);
    Await.until("all five handled", () -> effects.size() == 5, effects::toString);
    Await.until("all committed", () -> Map.of(0, 5L).equals(Broker.committed(group)));
    next.close();
    assertThat(effects).allSatisfy((event, n) -> assertThat(n).hasValue(1));
  }

  @Test
  void aConsumerWithAutoCommitOnIsRefusedNamingTheSetting() {
    IdempotentConsumer<String, String> consumer = consumer((r, a) -> effect(r)).build();
    for (String protocol : List.of("classic", "consumer")) {
      Properties p = Broker.consumerProperties(Broker.unique("group"));
      p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
      p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
      if (protocol.equals("consumer")) {
        p.remove(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG);
        p.remove(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
      }
      try (KafkaConsumer<String, String> kafka = new KafkaConsumer<>(p)) {
        assertThatThrownBy(() -> consumer.loop(kafka, List.of("t"))).as(protocol)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("enable.auto.commit");
      }
    }
    assertThat(consumer.loop(Broker.consumer(Broker.unique("group")), List.of("t"))).isNotNull();
  }

  @Test
  void offsetsARebalanceKeptFromCommittingAreCommittedAtTheNextChance() throws Exception {
    String topic = fiveRecords("rebalance");
    String group = Broker.unique("group");
    AtomicInteger refused = new AtomicInteger();
    Consumer<String, String> kafka = ConsumerViews.view(Broker.consumer(group), (method, args) -> {
      if (method.equals("commitSync") && refused.incrementAndGet() <= 3) {
        throw new RebalanceInProgressException("injected: a rebalance is in progress");
      }
    });
    IdempotentConsumerLoop<String, String> loop = consumer((r, a) -> effect(r)).build()
        .loop(kafka, List.of(topic));
    threads.submit(loop);

    Await.until("all five handled", () -> effects.size() == 5, effects::toString);
    Await.until("the kept offsets committed", () -> Map.of(0, 5L).equals(Broker.committed(group)),
        () -> Broker.committed(group) + " after " + refused + " commits");
    loop.close();
    assertThat(refused.get()).isGreaterThan(3);
  }
}
