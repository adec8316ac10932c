package dev.once.testkit;

import dev.once.IdempotencyKey;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import dev.once.spi.Status;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.assertj.core.api.AbstractAssert;
import org.assertj.core.api.Assertions;

/**
 * Assertions on what Once did with a key, for tests of an application's own code: whether the
 * work ran once, was replayed, failed for good (dead-lettered, in a consumer), and which steps
 * were compensated. Read from the key's record in the store and from an {@link OnceRecorder}.
 *
 * <pre>{@code
 * assertThatKey(once, recorder, IdempotencyKey.of("payments", "order-42"))
 *     .ranOnce().wasReplayed(2);
 * }</pre>
 */
public final class OnceAssertions {

  private OnceAssertions() {}

  /** Assertions on {@code key} in {@code store}, with what {@code recorder} saw. */
  public static KeyAssert assertThatKey(IdempotencyStore store, OnceRecorder recorder,
      IdempotencyKey key) {
    return new KeyAssert(key, store, recorder);
  }

  /** Assertions on {@code key} in {@code once}'s store, with what {@code recorder} saw. */
  public static KeyAssert assertThatKey(dev.once.Once once, OnceRecorder recorder,
      IdempotencyKey key) {
    return new KeyAssert(key, once.store(), recorder);
  }

  /** What a key came to. */
  public static final class KeyAssert extends AbstractAssert<KeyAssert, IdempotencyKey> {

    private final IdempotencyStore store;
    private final OnceRecorder recorder;

    KeyAssert(IdempotencyKey key, IdempotencyStore store, OnceRecorder recorder) {
      super(key, KeyAssert.class);
      this.store = store;
      this.recorder = recorder;
    }

    private IdempotencyRecord record() {
      Optional<IdempotencyRecord> record = store.find(actual);
      if (record.isEmpty()) {
        failWithMessage("expected a record for %s, but the store has none: the work never ran"
            + " under this key", actual);
      }
      return record.orElseThrow();
    }

    /** The work ran exactly once and its outcome is stored (success or a stored failure). */
    public KeyAssert ranOnce() {
      Assertions.assertThat(recorder.runs(actual)).as("runs of the work of %s", actual)
          .isEqualTo(1);
      Assertions.assertThat(record().status()).as("status of %s", actual)
          .isEqualTo(Status.COMPLETED);
      return this;
    }

    /** The work ran {@code times} times (first run, retries and takeovers). */
    public KeyAssert ran(int times) {
      Assertions.assertThat(recorder.runs(actual)).as("runs of the work of %s", actual)
          .isEqualTo(times);
      return this;
    }

    /** Duplicates got the stored outcome {@code times} times, without running the work. */
    public KeyAssert wasReplayed(int times) {
      Assertions.assertThat(recorder.count(actual, OnceRecorder.Event.REPLAYED))
          .as("replays of %s", actual).isEqualTo(times);
      return this;
    }

    /** The outcome stored is a success. */
    public KeyAssert succeeded() {
      Outcome outcome = completed();
      Assertions.assertThat(outcome.kind()).as("outcome of %s", actual)
          .isEqualTo(Outcome.Kind.SUCCESS);
      return this;
    }

    /**
     * The work failed for good: the failure of {@code type} is stored (and replayed to
     * duplicates); in a consumer, the message was dead-lettered.
     */
    public KeyAssert failedFor(Class<? extends Throwable> type) {
      Outcome outcome = completed();
      Assertions.assertThat(outcome.kind()).as("outcome of %s", actual)
          .isEqualTo(Outcome.Kind.FAILURE);
      Assertions.assertThat(outcome.failureType()).as("stored failure of %s", actual)
          .isEqualTo(type.getName());
      return this;
    }

    /**
     * The failure stored names exactly {@code steps} as compensated (undone), newest first: no
     * step more, none less, and none of them among those left uncompensated.
     */
    public KeyAssert compensated(String... steps) {
      Outcome outcome = completed();
      Assertions.assertThat(named(outcome.failureMessage(), COMPENSATED))
          .as("steps compensated for %s, in its stored failure \"%s\"", actual,
              outcome.failureMessage())
          .containsExactly(steps);
      return this;
    }

    /** The failure stored names exactly {@code steps} as left uncompensated (they need a person). */
    public KeyAssert notCompensated(String... steps) {
      Outcome outcome = completed();
      Assertions.assertThat(named(outcome.failureMessage(), NOT_COMPENSATED))
          .as("steps not compensated for %s, in its stored failure \"%s\"", actual,
              outcome.failureMessage())
          .containsExactly(steps);
      return this;
    }

    private static final String COMPENSATED = "compensated: ";
    private static final String NOT_COMPENSATED = "NOT compensated: ";

    /**
     * The steps a stored failure names under {@code label}: the engine ends the message with
     * " (compensated: a, b; NOT compensated: c)", either part alone when the other is empty.
     */
    static List<String> named(String message, String label) {
      if (message == null || !message.endsWith(")")) {
        return List.of();
      }
      int open = Math.max(message.lastIndexOf(" (" + COMPENSATED),
          message.lastIndexOf(" (" + NOT_COMPENSATED));
      if (open < 0) {
        return List.of();
      }
      for (String part : message.substring(open + 2, message.length() - 1).split("; ")) {
        if (part.startsWith(label)) {
          return Arrays.asList(part.substring(label.length()).split(", "));
        }
      }
      return List.of();
    }

    /** The key is not finished: a retry will run its work again (a retryable failure). */
    public KeyAssert isOpenForARetry() {
      Assertions.assertThat(record().status()).as("status of %s", actual)
          .isEqualTo(Status.FAILED);
      return this;
    }

    private Outcome completed() {
      IdempotencyRecord record = record();
      if (record.status() != Status.COMPLETED) {
        failWithMessage("expected %s to be finished, but it is %s", actual, record.status());
      }
      return record.outcome();
    }
  }
}
