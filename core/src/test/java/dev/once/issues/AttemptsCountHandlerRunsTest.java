package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Fingerprint;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.batch.ItemResult.Status;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 3: {@code maxAttempts} counted claims, not failures. A message released unrun
 * behind a failing one of its ordering group was retaken as a new attempt each time, so A and B in
 * one partition with {@code maxAttempts(3)}: A failed twice then succeeded, and B first ran as
 * attempt 3, failed once, and was dead-lettered. Claims given back unrun
 * ({@code IdempotencyStore.release}) now count no attempt.
 */
class AttemptsCountHandlerRunsTest {

  record Msg(String key, String partition) {}

  @Test
  void aMessageWaitingBehindAFailingOneIsNotChargedItsAttempts() {
    Once once = Once.builder(new InMemoryStore()).build();
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    List<DeadLetter<Msg>> deadLetters = new CopyOnWriteArrayList<>();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      int run = runs.computeIfAbsent(m.key(), k -> new AtomicInteger()).incrementAndGet();
      if (m.key().equals("A") && run <= 2 || m.key().equals("B") && run == 1) {
        throw new IllegalStateException("downstream busy");
      }
    }).scope("orders").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .orderedBy(Msg::partition).config(BatchConfig.builder().maxAttempts(3).build()).deadLetters(deadLetters::add).build();
    List<Msg> partition = List.of(new Msg("A", "p0"), new Msg("B", "p0"));

    List<ItemResult<Msg>> first = executor.process(partition).items();
    List<ItemResult<Msg>> second = executor.process(partition).items();
    List<ItemResult<Msg>> third = executor.process(partition).items();
    List<ItemResult<Msg>> fourth = executor.process(List.of(partition.get(1))).items();

    assertThat(first.get(1).status()).isEqualTo(Status.NOT_RUN);
    assertThat(first.get(1).attempt()).isZero();
    assertThat(second.get(1).status()).isEqualTo(Status.NOT_RUN);
    assertThat(third.get(0).status()).isEqualTo(Status.HANDLED);
    assertThat(third.get(0).attempt()).isEqualTo(3);
    assertThat(third.get(1).status()).as("B's first run fails: a retry, not a dead letter")
        .isEqualTo(Status.RETRY);
    assertThat(third.get(1).attempt()).isEqualTo(1);
    assertThat(fourth.get(0).status()).isEqualTo(Status.HANDLED);
    assertThat(fourth.get(0).attempt()).isEqualTo(2);
    assertThat(deadLetters).isEmpty();
  }

  /**
   * Issue 23, scenario 11: the dead letter's attempt count (Kafka's {@code once-dlt-attempts}
   * header) counted claims, so a message dead-lettered on its first handler run said 2 when it
   * had once been released unrun behind another message of its partition.
   */
  @Test
  void aMessageDeadLetteredOnItsFirstRunSaysOneAttempt() {
    Once once = Once.builder(new InMemoryStore())
        .failurePolicy(dev.once.FailurePolicy.retryAll()
            .terminalOn(IllegalArgumentException.class)).build();
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    List<DeadLetter<Msg>> deadLetters = new CopyOnWriteArrayList<>();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      int run = runs.computeIfAbsent(m.key(), k -> new AtomicInteger()).incrementAndGet();
      if (m.key().equals("A") && run == 1) {
        throw new IllegalStateException("downstream busy");
      }
      if (m.key().equals("B")) {
        throw new IllegalArgumentException("poison");
      }
    }).scope("orders").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .orderedBy(Msg::partition).deadLetters(deadLetters::add).build();
    List<Msg> partition = List.of(new Msg("A", "p0"), new Msg("B", "p0"));

    executor.process(partition); // A fails, B released unrun
    List<ItemResult<Msg>> second = executor.process(partition).items();

    assertThat(second.get(1).status()).isEqualTo(Status.DEAD_LETTERED);
    assertThat(deadLetters).singleElement()
        .satisfies(letter -> assertThat(letter.attempts()).isEqualTo(1));
  }
}
