package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.batch.ItemResult.Status;
import dev.once.batch.NoKeyPolicy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 5: a user function of the batch executor ({@code orderedBy},
 * {@code messageId}, the stop condition) that threw for one message ended the whole batch: the
 * messages already handled never had their outcomes stored, their claims were dropped, and after
 * the lease their redelivery ran them again. Now such a function fails its own message only, and
 * whatever ends a batch early, the outcomes already produced are stored first.
 */
class UserFunctionThatThrowsTest {

  record Msg(String key, String group) {}

  private final InMemoryStore store = new InMemoryStore();
  private final Once once = Once.builder(store).build();
  private final List<String> handled = new CopyOnWriteArrayList<>();
  private final List<DeadLetter<Msg>> deadLetters = new CopyOnWriteArrayList<>();

  private BatchExecutor.Builder<Msg> executor() {
    return BatchExecutor.<Msg>builder(once, (m, a) -> handled.add(m.key())).scope("orders")
        .key(Msg::key).fingerprint(m -> Fingerprint.of(m.key())).deadLetters(deadLetters::add);
  }

  private static List<Status> statuses(BatchOutcome<Msg> outcome) {
    return outcome.items().stream().map(ItemResult::status).toList();
  }

  private boolean stored(String key) {
    return store.find(IdempotencyKey.of("orders", key))
        .map(r -> r.status() == dev.once.spi.Status.COMPLETED).orElse(false);
  }

  @Test
  void anOrderingFunctionThatThrowsForOneMessageFailsThatMessageOnly() {
    BatchExecutor<Msg> executor = executor().orderedBy(m -> {
      if (m.group() == null) {
        throw new IllegalStateException("no partition header");
      }
      return m.group();
    }).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("1", "g"), new Msg("2", "g"),
        new Msg("3", null), new Msg("4", "g")));

    assertThat(statuses(outcome)).containsExactly(Status.HANDLED, Status.HANDLED,
        Status.DEAD_LETTERED, Status.HANDLED);
    assertThat(handled).containsExactly("1", "2", "4");
    assertThat(deadLetters).singleElement().satisfies(letter -> {
      assertThat(letter.reason()).isEqualTo(DeadLetter.Reason.NO_KEY);
      assertThat(letter.exceptionMessage()).contains("no partition header");
    });
    assertThat(stored("1")).isTrue();
    assertThat(stored("2")).isTrue();
  }

  @Test
  void aStopConditionThatThrowsStopsTheBatchWithTheOutcomesSoFarStored() {
    AtomicInteger asked = new AtomicInteger();
    BatchExecutor<Msg> executor = executor().build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("1", "g"), new Msg("2", "g"),
        new Msg("3", "g")), "orders", () -> {
          if (asked.incrementAndGet() == 3) {
            throw new IllegalStateException("shutdown hook broke");
          }
          return false;
        });

    assertThat(statuses(outcome)).containsExactly(Status.HANDLED, Status.HANDLED,
        Status.NOT_RUN);
    assertThat(stored("1")).isTrue();
    assertThat(stored("2")).isTrue();
    assertThat(handled).containsExactly("1", "2");
  }

  @Test
  void aMessageIdFunctionThatThrowsDeadLettersThatKeylessMessageOnly() {
    BatchExecutor<Msg> executor = executor()
        .config(BatchConfig.builder().noKeyPolicy(NoKeyPolicy.PROCESS_UNPROTECTED).build())
        .messageId(m -> {
          throw new IllegalStateException("no offset");
        }).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("1", "g"), new Msg(null, "g"),
        new Msg("3", "g")));

    assertThat(statuses(outcome)).containsExactly(Status.HANDLED, Status.DEAD_LETTERED,
        Status.HANDLED);
    assertThat(stored("1")).isTrue();
    assertThat(stored("3")).isTrue();
  }

  @Test
  void anErrorOutOfAHandlerStoresTheOutcomesAlreadyProducedFirst() {
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      if (m.key().equals("3")) {
        throw new OutOfMemoryError("simulated");
      }
      handled.add(m.key());
    }).scope("orders").key(Msg::key).build();

    assertThatThrownBy(() -> executor.process(List.of(new Msg("1", "g"), new Msg("2", "g"),
        new Msg("3", "g")))).isInstanceOf(OutOfMemoryError.class);

    assertThat(stored("1")).isTrue();
    assertThat(stored("2")).isTrue();
  }

  /**
   * Found in review: the failure policy's predicate is a user function too. One that threw for
   * message A ended the whole batch, and B (claimed with the batch, never run) was neither run
   * nor released. A predicate that throws now counts the failure as retryable.
   */
  @Test
  void aFailurePolicyPredicateThatThrowsFailsItsMessageOnly() {
    Once once = Once.builder(store).failurePolicy(FailurePolicy.retryAll().terminalIf(t -> {
      throw new IllegalStateException("classifier bug");
    })).build();
        BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      if (m.key().equals("A")) {
        throw new RuntimeException("boom");
      }
      handled.add(m.key());
    }).scope("orders").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .deadLetters(l -> {}).build();

    BatchOutcome<Msg> outcome = executor.process(List.of(new Msg("A", null),
        new Msg("B", null)));

    assertThat(statuses(outcome)).containsExactly(Status.RETRY, Status.HANDLED);
    assertThat(handled).containsExactly("B");
  }
}
