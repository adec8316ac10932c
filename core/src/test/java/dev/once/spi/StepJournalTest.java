package dev.once.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Checkpoint;
import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.ManualClock;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import dev.once.Step;
import dev.once.StepFailedException;
import dev.once.spi.StepJournal.Entry;
import dev.once.spi.StepJournal.State;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The public view of a record's step journal, over journals written by real steps. */
class StepJournalTest {

  private static final Fingerprint FP = Fingerprint.of("order");
  private static final String TEXT = Codecs.utf8().mediaType();

  /** A terminal failure of the business. */
  static final class OutOfStock extends RuntimeException {
    OutOfStock(String message) {
      super(message);
    }
  }

  /** A worker dying at this point: an Error, which releases the claim. */
  static final class WorkerDeath extends Error {
    WorkerDeath() {
      super("worker died", null, false, false);
    }
  }

  private final ManualClock clock = new ManualClock();
  private final InMemoryStore store = new InMemoryStore();
  private final Once once = Once.builder(store).clock(clock).lease(Duration.ofSeconds(30))
      .failurePolicy(FailurePolicy.retryAll().terminalOn(OutOfStock.class)).build();

  private StepJournal journalOf(IdempotencyKey key) {
    return StepJournal.read(store.find(key).orElseThrow().checkpoint()).orElseThrow();
  }

  @Test
  void aCompletedSagaShowsEachStepItsResultSizeAndTheUsersCheckpoint() {
    IdempotencyKey key = IdempotencyKey.of("orders", "o-1");
    Step<String> reserve = Step.of("reserve", Codecs.utf8()).compensate((r, k) -> { });

    String result = once.execute(key, FP, Codecs.utf8(), a -> {
      String r = a.step(reserve, k -> "res-1");
      a.checkpoint("page", new byte[] {1, 2, 3});
      return r + a.step("ship", Codecs.utf8(), k -> "parcel-42");
    });

    assertThat(result).isEqualTo("res-1parcel-42");
    IdempotencyRecord record = store.find(key).orElseThrow();
    assertThat(record.status()).isEqualTo(Status.COMPLETED);
    assertThat(record.checkpoint().name()).isEqualTo(StepJournal.CHECKPOINT_NAME)
        .isEqualTo("once:journal");
    StepJournal journal = StepJournal.read(record.checkpoint()).orElseThrow();
    assertThat(journal.steps()).containsExactly(
        new Entry("reserve", State.DONE, true, TEXT, 5, ""),
        new Entry("ship", State.DONE, false, TEXT, 9, ""));
    assertThat(journal.failure()).isEmpty();
    assertThat(journal.compensationFailures()).isZero();
    assertThat(journal.userCheckpoint()).hasValueSatisfying(c -> {
      assertThat(c.name()).isEqualTo("page");
      assertThat(c.data()).containsExactly(1, 2, 3);
    });
    assertThatThrownBy(() -> journal.steps().add(journal.steps().get(0)))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void aFailedSagaShowsTheCommittedFailureTheCompensatedStepsAndTheFailedAttempts() {
    IdempotencyKey key = IdempotencyKey.of("orders", "o-2");
    AtomicInteger releaseFailures = new AtomicInteger(1);
    Step<String> reserve = Step.of("reserve", Codecs.utf8()).compensate((r, k) -> {
      if (releaseFailures.getAndDecrement() > 0) {
        throw new IllegalStateException("warehouse API down");
      }
    });
    Step<String> charge = Step.of("charge", Codecs.utf8()).compensate((r, k) -> { });
    Runnable saga = () -> once.execute(key, FP, Codecs.utf8(), a -> {
      a.step(reserve, k -> "res-1");
      a.step(charge, k -> "ch_1");
      return a.step("ship", Codecs.utf8(), k -> {
        throw new OutOfStock("warehouse empty");
      });
    });

    // Compensating in reverse order: the charge is refunded, releasing the stock fails.
    assertThatThrownBy(saga::run).isInstanceOf(OutOfStock.class);
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.FAILED);
    StepJournal compensating = journalOf(key);
    assertThat(compensating.steps()).containsExactly(
        new Entry("reserve", State.DONE, true, TEXT, 5, ""),
        new Entry("charge", State.COMPENSATED, true, TEXT, 4, ""),
        new Entry("ship", State.FAILED, false, "", 0,
            OutOfStock.class.getName() + ": warehouse empty"));
    assertThat(compensating.failure()).hasValueSatisfying(f -> {
      assertThat(f.kind()).isEqualTo(Outcome.Kind.FAILURE);
      assertThat(f.failureType()).isEqualTo(OutOfStock.class.getName());
      assertThat(f.failureMessage()).isEqualTo("warehouse empty");
    });
    assertThat(compensating.compensationFailures()).isEqualTo(1);
    assertThat(compensating.userCheckpoint()).isEmpty();

    // The retry replays the failed step and compensates what is left: finished.
    assertThatThrownBy(saga::run).isInstanceOf(StepFailedException.class);
    assertThatThrownBy(saga::run).isInstanceOf(ReplayedFailureException.class);
    assertThat(store.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
    StepJournal done = journalOf(key);
    assertThat(done.steps()).extracting(Entry::state)
        .containsExactly(State.COMPENSATED, State.COMPENSATED, State.FAILED);
    assertThat(done.failure()).isPresent();
    assertThat(done.compensationFailures()).isEqualTo(1);
  }

  @Test
  void aStepStartedByAWorkerThatDiedAndAResultTooLargeToJournalAreShownAsSuch() {
    IdempotencyKey key = IdempotencyKey.of("orders", "o-3");
    Once small = Once.builder(store).clock(clock).maxPayloadBytes(300).build();
    Step<String> mail = Step.of("mail", Codecs.utf8()).reconcile(k -> Optional.empty());

    assertThatThrownBy(() -> small.execute(key, FP, Codecs.utf8(), a -> {
      a.step("export", Codecs.utf8(), k -> "x".repeat(500));
      return a.step(mail, k -> {
        throw new WorkerDeath(); // after the downstream call, before its result is journaled
      });
    })).isInstanceOf(WorkerDeath.class);

    StepJournal journal = journalOf(key);
    assertThat(journal.steps()).hasSize(2);
    assertThat(journal.steps().get(0)).satisfies(e -> {
      assertThat(e.name()).isEqualTo("export");
      assertThat(e.state()).isEqualTo(State.NOT_STORED);
      assertThat(e.mediaType()).isEmpty();
      assertThat(e.size()).isZero();
      assertThat(e.detail()).contains("PayloadTooLargeException");
    });
    assertThat(journal.steps().get(1))
        .isEqualTo(new Entry("mail", State.STARTED, false, "", 0, ""));
  }

  @Test
  void aCheckpointThatIsNotAReadableJournalGivesNothing() {
    byte[] damaged = {2, 0, 0, 0, 0, 1}; // version 2, then cut short
    byte[] newer = {99, 0, 0, 0, 0, 0, 0};

    assertThat(StepJournal.read(null)).isEmpty();
    assertThat(StepJournal.read(Checkpoint.of("page", new byte[] {7}))).isEmpty();
    assertThat(StepJournal.read(Checkpoint.of("once:journal.bak", new byte[0]))).isEmpty();
    assertThat(StepJournal.read(Checkpoint.of(StepJournal.CHECKPOINT_NAME, new byte[0])))
        .isEmpty();
    assertThat(StepJournal.read(Checkpoint.of(StepJournal.CHECKPOINT_NAME, damaged))).isEmpty();
    assertThat(StepJournal.read(Checkpoint.of(StepJournal.CHECKPOINT_NAME, newer))).isEmpty();
    assertThat(StepJournal.read(Checkpoint.of(StepJournal.CHECKPOINT_NAME,
        "{\"not\":\"a journal\"}".getBytes(StandardCharsets.UTF_8)))).isEmpty();
  }

  @Test
  void workWithoutStepsKeepsTheUsersCheckpointWhichIsNoJournal() {
    IdempotencyKey key = IdempotencyKey.of("orders", "o-4");
    once.execute(key, FP, Codecs.utf8(), a -> {
      a.checkpoint("page", new byte[] {9});
      return "ok";
    });

    Checkpoint stored = store.find(key).orElseThrow().checkpoint();
    assertThat(stored.name()).isEqualTo("page");
    assertThat(StepJournal.read(stored)).isEmpty();
  }
}
