package dev.once.internal;

import dev.once.Attempt;
import dev.once.Checkpoint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.PayloadTooLargeException;
import dev.once.ReplayedFailureException;
import dev.once.Scheduler;
import dev.once.Step;
import dev.once.StepFailedException;
import dev.once.spi.Claim;
import dev.once.spi.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@link Attempt} of one acquired claim, with its heartbeat. Public for the integrations that
 * claim keys themselves (the Kafka consumer's batch claims).
 */
public final class AttemptImpl implements Attempt {

  private static final System.Logger LOG = System.getLogger(Once.class.getName());

  private final IdempotencyKey key;
  private final long token;
  private final int attemptNumber;
  private final boolean takeover;
  private final Once.Config config;
  private final StoreCalls store;
  private volatile Instant leaseUntil;
  /** The steps and the user's checkpoint, as last written to (or read from) the record. */
  private volatile Journal journal;
  /** Compensations of the steps this attempt completed or replayed, in the order reached. */
  private final List<Runnable> compensations = new ArrayList<>();
  private final List<String> compensationNames = new ArrayList<>();
  private volatile boolean leaseLost;

  public AttemptImpl(IdempotencyKey key, Claim.Acquired acquired, Once.Config config,
      StoreCalls store) {
    this.key = key;
    this.token = acquired.token();
    this.attemptNumber = acquired.attempt();
    this.takeover = acquired.takeover();
    this.journal = Journal.of(acquired.checkpoint());
    // The store honours the claim clockSkewMargin longer than this worker may rely on it.
    this.leaseUntil = acquired.leaseUntil().minus(config.clockSkewMargin());
    this.config = config;
    this.store = store;
  }

  @Override
  public IdempotencyKey idempotencyKey() {
    return key;
  }

  @Override
  public String key() {
    return key.downstreamKey();
  }

  @Override
  public String key(String step) {
    return key.downstreamKey(step);
  }

  @Override
  public long token() {
    return token;
  }

  @Override
  public int attemptNumber() {
    return attemptNumber;
  }

  @Override
  public boolean takeover() {
    return takeover;
  }

  @Override
  public Instant leaseUntil() {
    return leaseUntil;
  }

  @Override
  public Optional<Checkpoint> lastCheckpoint() {
    return Optional.ofNullable(journal.user());
  }

  @Override
  public void checkpoint(String name, byte[] data) {
    Checkpoint checkpoint = Checkpoint.of(name, data);
    if (name.equals(Journal.CHECKPOINT_NAME)) {
      throw new IllegalArgumentException("checkpoint name '" + name + "' is reserved for steps");
    }
    write(journal.withUser(checkpoint), "checkpoint " + name);
  }

  /**
   * Writes {@code next} as the record's checkpoint, fenced, and keeps it as the journal.
   *
   * @throws PayloadTooLargeException before any call, if it exceeds the payload bound
   */
  private void write(Journal next, String what) {
    Checkpoint stored = next.toCheckpoint();
    if (stored.size() > config.maxPayloadBytes()) {
      throw new PayloadTooLargeException(next.size() == 0 ? what : what + " (with the step "
          + "journal)", stored.size(), config.maxPayloadBytes());
    }
    fenced(() -> store.checkpoint(key, token, stored, config.clock().instant()));
    journal = next;
  }

  @Override
  public <T, X extends Exception> T step(Step<T> step, Step.Body<T, X> body) throws X {
    Objects.requireNonNull(step, "step");
    Objects.requireNonNull(body, "body");
    String name = step.name();
    String stepKey = key.downstreamKey(name);
    Journal.Entry entry = journal.entry(name);
    if (entry != null) {
      switch (entry.state()) {
        case DONE -> {
          T value = step.codec().decode(entry.body());
          registerCompensation(step, value);
          return value;
        }
        case COMPENSATED -> {
          return step.codec().decode(entry.body());
        }
        case NOT_STORED -> throw new OutcomeNotStoredException(key, "step '" + name + "': "
            + new String(entry.body(), StandardCharsets.UTF_8));
        case FAILED -> {
          Outcome failure = Journal.failureOf(entry);
          throw new StepFailedException(key, name, failure.failureType(),
              failure.failureMessage());
        }
        case STARTED -> {
          if (step.reconciler().isPresent()) {
            Optional<T> found = reconcile(step, stepKey);
            if (found.isPresent()) {
              T value = found.get();
              journalResult(step, value);
              registerCompensation(step, value);
              return value;
            }
          }
        }
        default -> throw new IllegalStateException("unknown step state " + entry.state());
      }
    } else {
      if (journal.size() >= MAX_STEPS) {
        throw new IllegalStateException("the work of " + key + " has " + MAX_STEPS
            + " steps already, the most one key may journal; step '" + name + "' did not run");
      }
      if (step.reconciler().isPresent()) {
        // The intent first: a takeover that finds it asks the reconciler instead of guessing.
        write(journal.with(new Journal.Entry(name, Journal.State.STARTED, "", new byte[0])),
            "step " + name);
      }
    }
    T value;
    try {
      value = body.run(stepKey);
    } catch (Exception | Error failure) {
      if (!(failure instanceof LeaseLostException) && config.failurePolicy().isTerminal(failure)) {
        write(journal.with(new Journal.Entry(name, Journal.State.FAILED,
            Outcome.FAILURE_MEDIA_TYPE, Journal.failureOf(failure).body())), "step " + name);
      }
      throw Execution.rethrow(failure);
    }
    journalResult(step, value);
    registerCompensation(step, value);
    return value;
  }

  private <T> Optional<T> reconcile(Step<T> step, String stepKey) {
    try {
      Optional<T> found = step.reconciler().orElseThrow().find(stepKey);
      return found == null ? Optional.empty() : found;
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("the reconciler of step '" + step.name() + "' of " + key
          + " failed: " + e.getMessage(), e);
    }
  }

  /**
   * Journals a step's result; one that cannot be stored (too large, or the codec threw) is
   * journaled as not stored, so the step still never runs again.
   */
  private <T> void journalResult(Step<T> step, T value) {
    String name = step.name();
    byte[] body;
    try {
      body = step.codec().encode(value);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      journalNotStored(name, e);
      return;
    }
    try {
      write(journal.with(new Journal.Entry(name, Journal.State.DONE, step.codec().mediaType(),
          body)), "result of step " + name);
    } catch (PayloadTooLargeException e) {
      journalNotStored(name, e); // refused before any call: nothing was written
    }
  }

  private void journalNotStored(String name, Throwable cause) {
    LOG.log(System.Logger.Level.WARNING, "the result of step '" + name + "' of " + key
        + " cannot be journaled (" + cause + "); journaled without it, so the step does not run "
        + "again", cause);
    write(journal.with(new Journal.Entry(name, Journal.State.NOT_STORED, "",
        Execution.describe(cause).getBytes(StandardCharsets.UTF_8))), "step " + name);
  }

  private <T> void registerCompensation(Step<T> step, T value) {
    step.compensation().ifPresent(c -> {
      if (compensationNames.contains(step.name())) {
        return;
      }
      String compensationKey = key.downstreamKey(step.name() + ":compensation");
      compensationNames.add(step.name());
      compensations.add(() -> {
        try {
          c.undo(value, compensationKey);
        } catch (RuntimeException e) {
          throw e;
        } catch (Exception e) {
          throw new CompensationFailed(step.name(), e);
        }
      });
    });
  }

  /**
   * Before a terminal failure is stored: commits the journal to it, then runs the compensations of
   * the completed steps in reverse order, each journaled as done so none runs twice.
   *
   * @return the names of the steps compensated, in the order undone (empty when none)
   * @throws RuntimeException what a compensation threw: the failure must not be stored yet, the
   *     next attempt retries the remaining compensations
   */
  public List<String> compensate(Throwable failure) {
    if (compensations.isEmpty() && journal.failure() == null) {
      return List.of();
    }
    if (journal.failure() == null) {
      write(journal.withFailure(Journal.failureOf(failure)), "the failure being compensated");
    }
    for (int i = compensations.size() - 1; i >= 0; i--) {
      String name = compensationNames.get(i);
      Journal.Entry entry = journal.entry(name);
      if (entry == null || entry.state() != Journal.State.DONE) {
        continue;
      }
      compensations.get(i).run();
      write(journal.with(new Journal.Entry(name, Journal.State.COMPENSATED, entry.mediaType(),
          entry.body())), "compensation of step " + name);
    }
    // Every step undone, by this attempt or an earlier one, in the order undone: newest first.
    List<String> all = new ArrayList<>();
    List<Journal.Entry> entries = journal.entries();
    for (int i = entries.size() - 1; i >= 0; i--) {
      if (entries.get(i).state() == Journal.State.COMPENSATED) {
        all.add(entries.get(i).name());
      }
    }
    return all;
  }

  /**
   * The terminal failure an earlier attempt committed to when it began compensating, or null:
   * such work ends in that failure whatever it does now.
   */
  public ReplayedFailureException committedFailure() {
    Outcome committed = journal.failure();
    return committed == null ? null : new ReplayedFailureException(key,
        committed.failureType(), committed.failureMessage());
  }

  /**
   * For a terminal failure: runs the compensations ({@link #compensate}) and returns the outcome
   * to store, the failure (the committed one, if an earlier attempt began compensating) naming
   * the steps compensated.
   *
   * @throws RuntimeException what a compensation threw: store nothing, release the key
   */
  public Outcome terminalOutcome(Throwable failure) {
    Outcome committed = journal.failure();
    List<String> compensated = compensate(failure);
    String type = committed != null ? committed.failureType() : failure.getClass().getName();
    String message = committed != null ? committed.failureMessage()
        : failure.getMessage() == null ? "" : failure.getMessage();
    return Outcome.failure(type, compensated.isEmpty() ? message
        : message + " (compensated: " + String.join(", ", compensated) + ")");
  }

  /** What a compensation threw, checked: wrapped so it can pass through. */
  public static final class CompensationFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CompensationFailed(String step, Exception cause) {
      super("the compensation of step '" + step + "' failed: " + cause, cause);
    }
  }

  @Override
  public void extendLease() {
    fenced(() -> leaseUntil = store.extend(key, token, config.clock().instant(),
        config.storedLease()).minus(config.clockSkewMargin()));
  }

  @Override
  public boolean isLeaseLost() {
    return leaseLost;
  }

  /**
   * Extends the lease every third of it until the task is cancelled, if the config has a
   * heartbeat scheduler; else null.
   */
  public Scheduler.Task startHeartbeat() {
    Scheduler scheduler = config.heartbeat();
    if (scheduler == null) {
      return null;
    }
    Duration period = config.lease().dividedBy(3);
    return scheduler.scheduleAtFixedRate(this::heartbeat,
        period.isZero() ? Duration.ofMillis(1) : period);
  }

  /**
   * One heartbeat: extends the lease. Whatever goes wrong is logged and told to the listener, and
   * the next beat tries again; only a lost lease ends the beating (there is nothing left to keep).
   */
  public void heartbeat() {
    if (leaseLost) {
      return;
    }
    try {
      extendLease();
    } catch (LeaseLostException e) {
      LOG.log(System.Logger.Level.WARNING, "heartbeat found the lease on {0} lost", key);
      Execution.notify(config.listener(), l -> l.onLeaseLost(key, token));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "heartbeat could not extend the lease on " + key
          + "; the next beat tries again", e);
      Execution.notify(config.listener(), l -> l.onHeartbeatFailed(key, token, e));
    }
  }

  @Override
  public void ensureLease() {
    if (leaseLost) {
      throw new LeaseLostException(key, token);
    }
    Instant now = config.clock().instant();
    Duration third = config.lease().dividedBy(3);
    if (now.plus(third).isBefore(leaseUntil)) {
      return;
    }
    extendLease();
  }

  private void fenced(Runnable write) {
    try {
      write.run();
    } catch (LeaseLostException e) {
      leaseLost = true;
      throw e;
    }
  }
}
