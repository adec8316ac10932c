package dev.once.spi;

import dev.once.Checkpoint;
import dev.once.internal.Journal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A read-only view of the step journal a record's checkpoint holds, for tools that show records
 * (such as {@code once inspect}). Work that uses {@linkplain dev.once.Step durable steps} keeps
 * them in its record's checkpoint, under the name {@value #CHECKPOINT_NAME}: each step's state and
 * journaled result, the terminal failure the work committed to when it began compensating, how
 * many attempts at compensating it failed, and the user's own last checkpoint. The encoding is
 * internal and may change; this view is how to read it.
 *
 * <pre>{@code
 * store.find(key).flatMap(r -> StepJournal.read(r.checkpoint())).ifPresent(journal ->
 *     journal.steps().forEach(s -> System.out.println(s.name() + " " + s.state())));
 * }</pre>
 *
 * <p>Immutable. Results themselves are not exposed (only their media type and size): decoding
 * them needs the step's codec, which only the work has.
 */
public final class StepJournal {

  /** The checkpoint name a step journal is stored under; users' checkpoints cannot take it. */
  public static final String CHECKPOINT_NAME = Journal.CHECKPOINT_NAME;

  /** Where a step is. */
  public enum State {
    /**
     * Journaled as started before a step with a reconciler ran: its effect may exist, and the
     * next attempt that reaches the step asks the reconciler.
     */
    STARTED,
    /** Finished, its result journaled: later attempts get the result without running it. */
    DONE,
    /** Finished, but its result could not be journaled (too large, or its codec failed). */
    NOT_STORED,
    /** Failed terminally: later attempts that reach it get the same failure. */
    FAILED,
    /** Finished, then undone by its compensation after the work failed terminally. */
    COMPENSATED
  }

  /**
   * One step of the journal.
   *
   * @param name the step's name
   * @param state where the step is
   * @param compensable whether the step declared a compensation (false in journals written by
   *     versions that did not record it, and for failed steps)
   * @param mediaType the media type of the journaled result when {@link State#DONE} or
   *     {@link State#COMPENSATED}; "" otherwise
   * @param size the size in bytes of the journaled result when {@link State#DONE} or
   *     {@link State#COMPENSATED}; 0 otherwise
   * @param detail for a {@link State#FAILED} step its failure ("type: message"), for a
   *     {@link State#NOT_STORED} one why its result was not stored; "" otherwise
   */
  public record Entry(String name, State state, boolean compensable, String mediaType, int size,
      String detail) {

    /** Checks that no component is null and the size is not negative. */
    public Entry {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(state, "state");
      Objects.requireNonNull(mediaType, "mediaType");
      Objects.requireNonNull(detail, "detail");
      if (size < 0) {
        throw new IllegalArgumentException("size must not be negative, was " + size);
      }
    }
  }

  private final List<Entry> steps;
  private final Outcome failure;
  private final int compensationFailures;
  private final Checkpoint userCheckpoint;

  private StepJournal(List<Entry> steps, Outcome failure, int compensationFailures,
      Checkpoint userCheckpoint) {
    this.steps = steps;
    this.failure = failure;
    this.compensationFailures = compensationFailures;
    this.userCheckpoint = userCheckpoint;
  }

  /**
   * The step journal {@code checkpoint} holds (a record's {@link IdempotencyRecord#checkpoint()}).
   * Empty when {@code checkpoint} is null, is not named {@value #CHECKPOINT_NAME} (a user's own
   * checkpoint, of work without steps), or is a journal this version cannot read (written by a
   * newer version, or damaged). Never throws for any checkpoint.
   */
  public static Optional<StepJournal> read(Checkpoint checkpoint) {
    if (checkpoint == null || !checkpoint.name().equals(CHECKPOINT_NAME)) {
      return Optional.empty();
    }
    Journal journal;
    try {
      journal = Journal.of(checkpoint);
    } catch (RuntimeException unreadable) {
      return Optional.empty();
    }
    List<Entry> steps = new ArrayList<>(journal.size());
    for (Journal.Entry e : journal.entries()) {
      steps.add(entry(e));
    }
    return Optional.of(new StepJournal(List.copyOf(steps), journal.failure(),
        journal.compensationFailures(), journal.user()));
  }

  private static Entry entry(Journal.Entry e) {
    State state = switch (e.state()) {
      case STARTED -> State.STARTED;
      case DONE -> State.DONE;
      case NOT_STORED -> State.NOT_STORED;
      case FAILED -> State.FAILED;
      case COMPENSATED -> State.COMPENSATED;
    };
    byte[] body = e.body();
    boolean hasResult = state == State.DONE || state == State.COMPENSATED;
    String detail = switch (state) {
      case FAILED -> {
        Outcome failure = Outcome.of(Outcome.Kind.FAILURE, Outcome.FAILURE_MEDIA_TYPE, body);
        String message = failure.failureMessage();
        yield message.isEmpty() ? failure.failureType()
            : failure.failureType() + ": " + message;
      }
      case NOT_STORED -> new String(body, StandardCharsets.UTF_8);
      default -> "";
    };
    return new Entry(e.name(), state, e.compensable(), hasResult ? e.mediaType() : "",
        hasResult ? body.length : 0, detail);
  }

  /** Every step, in the order they first ran. */
  public List<Entry> steps() {
    return steps;
  }

  /**
   * The terminal failure the work committed to when it began compensating its steps (a
   * {@link Outcome.Kind#FAILURE} outcome: {@link Outcome#failureType()},
   * {@link Outcome#failureMessage()}); every later attempt ends in it. Empty when compensation
   * never began.
   */
  public Optional<Outcome> failure() {
    return Optional.ofNullable(failure);
  }

  /** How many attempts at compensating the committed {@linkplain #failure() failure} failed. */
  public int compensationFailures() {
    return compensationFailures;
  }

  /**
   * The user's own last checkpoint ({@link dev.once.Attempt#checkpoint(String, byte[])}), kept
   * inside the journal; empty when the work wrote none.
   */
  public Optional<Checkpoint> userCheckpoint() {
    return Optional.ofNullable(userCheckpoint);
  }

  @Override
  public String toString() {
    return "StepJournal[" + steps.size() + " steps, failure " + (failure == null ? "none"
        : failure.failureType()) + ", " + compensationFailures + " failed compensations, "
        + "user checkpoint " + (userCheckpoint == null ? "none" : userCheckpoint.name()) + "]";
  }
}
