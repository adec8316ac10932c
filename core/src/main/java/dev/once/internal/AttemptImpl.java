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
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@link Attempt} of one acquired claim, with its heartbeat: of a call ({@link Execution}) or of
 * a message of a batch ({@link BatchEngine}).
 */
final class AttemptImpl implements Attempt {

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
  /** Compensations of the steps this attempt completed or replayed, by step name. */
  private final Map<String, Runnable> compensations = new HashMap<>();
  /** Undeclared compensable steps already warned about (once per name and JVM). */
  private static final Set<String> UNDECLARED_WARNED = ConcurrentHashMap.newKeySet();
  private volatile boolean leaseLost;
  /** Stops the heartbeat: taken by each beat and by {@link #startHeartbeat}'s cancel. */
  private final ReentrantLock beating = new ReentrantLock();
  private boolean beatsStopped; // guarded by beating

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
      if (journal.failure() != null) {
        throw committedFailure(); // see below: no new step after a committed failure
      }
      if (journal.size() >= MAX_STEPS) {
        throw new IllegalStateException("the work of " + key + " has " + MAX_STEPS
            + " steps already, the most one key may journal; step '" + name + "' did not run");
      }
      if (step.reconciler().isPresent()) {
        // The intent first: a takeover that finds it asks the reconciler instead of guessing.
        write(journal.with(new Journal.Entry(name, Journal.State.STARTED, "", new byte[0],
            step.compensation().isPresent())),
            "step " + name);
      }
    }
    if (journal.failure() != null) {
      // An earlier attempt committed to a terminal failure: whatever path this one takes, it
      // ends in that failure, and starts no effect an undone order should not have.
      throw committedFailure();
    }
    refuseIfLapsed(); // no effect starts on a lease that passed while this worker was away
    T value;
    try {
      value = body.run(stepKey);
    } catch (Exception | Error failure) {
      if (!(failure instanceof LeaseLostException) && Execution.isTerminal(config, failure)) {
        write(journal.with(new Journal.Entry(name, Journal.State.FAILED,
            Outcome.FAILURE_MEDIA_TYPE, Journal.failureOf(failure).body(), false)),
            "step " + name);
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
      journalNotStored(step, e);
      return;
    }
    try {
      write(journal.with(new Journal.Entry(name, Journal.State.DONE, step.codec().mediaType(),
          body, step.compensation().isPresent())), "result of step " + name);
    } catch (PayloadTooLargeException e) {
      journalNotStored(step, e); // refused before any call: nothing was written
    }
  }

  private void journalNotStored(Step<?> step, Throwable cause) {
    String name = step.name();
    LOG.log(System.Logger.Level.WARNING, "the result of step '" + name + "' of " + key
        + " cannot be journaled (" + cause + "); journaled without it, so the step does not run "
        + "again", cause);
    write(journal.with(new Journal.Entry(name, Journal.State.NOT_STORED, "",
        Execution.describe(cause).getBytes(StandardCharsets.UTF_8),
        step.compensation().isPresent())), "step " + name);
  }

  private <T> void registerCompensation(Step<T> step, T value) {
    step.compensation().ifPresent(c -> {
      if (config.step(step.name()).isEmpty() && UNDECLARED_WARNED.add(step.name())) {
        LOG.log(System.Logger.Level.WARNING, "step ''{0}'' has a compensation but is not declared"
            + " with Once.Builder.steps: a retry that fails before it reaches this step cannot"
            + " compensate it", step.name());
      }
      compensations.putIfAbsent(step.name(), () -> undo(step, c, value));
    });
  }

  private <T> void undo(Step<T> step, Step.Compensation<T> compensation, T value) {
    try {
      compensation.undo(value, key.downstreamKey(step.name() + ":compensation"));
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new CompensationFailed("the compensation of step '" + step.name() + "' failed: " + e,
          e);
    }
  }

  /**
   * How to undo the journaled step {@code entry}: the compensation this attempt registered when it
   * reached the step, else the declared step's ({@link Once.Builder#steps}) applied to the
   * journaled result; null when neither is known.
   */
  private Runnable undoFor(Journal.Entry entry) {
    Runnable own = compensations.get(entry.name());
    if (own != null) {
      return own;
    }
    if (entry.state() != Journal.State.DONE) {
      return null; // NOT_STORED: the result is gone, only the attempt that made it can undo it
    }
    return config.step(entry.name()).flatMap(step -> declaredUndo(step, entry)).orElse(null);
  }

  private <T> Optional<Runnable> declaredUndo(Step<T> step, Journal.Entry entry) {
    return step.compensation().map(c -> () -> undo(step, c, step.codec().decode(entry.body())));
  }

  /** Whether {@code entry} is a finished step that must be undone before a failure is final. */
  private boolean toUndo(Journal.Entry entry) {
    if (entry.state() == Journal.State.STARTED) {
      return entry.compensable(); // its effect may exist: the reconciler tells
    }
    boolean finished = entry.state() == Journal.State.DONE
        || entry.state() == Journal.State.NOT_STORED;
    return finished && (entry.compensable() || undoFor(entry) != null);
  }

  /**
   * Before a terminal failure is stored: commits the journal to it, then undoes every finished
   * step the journal names that has a compensation, newest first, each journaled as compensated
   * so none is undone twice: those this attempt reached by the compensation it registered, the
   * others by their declared step ({@link Once.Builder#steps}). A compensation that throws, or a
   * compensable step neither reached nor declared, stops the undoing there; the failed try is
   * journaled and, until {@link Once.Config#compensationAttempts} tries have failed,
   * {@link CompensationFailed} is thrown (store nothing, release the key: the next attempt undoes
   * the rest). After that many, the failure is final all the same, naming what was not undone.
   *
   * @return the failure to store, naming the steps undone and those left undone
   * @throws CompensationFailed if undoing failed and tries are left
   */
  public Termination terminate(Throwable failure) {
    Outcome committed = journal.failure();
    String type = committed != null ? committed.failureType() : failure.getClass().getName();
    String message = committed != null ? committed.failureMessage()
        : failure.getMessage() == null ? "" : failure.getMessage();
    List<Journal.Entry> entries = journal.entries();
    if (committed == null && entries.stream().noneMatch(this::toUndo)) {
      return new Termination(Outcome.failure(type, message), List.of(), List.of());
    }
    if (committed == null) {
      commit(failure);
    }
    RuntimeException stoppedBy = null;
    Set<String> neverRan = new HashSet<>();
    for (int i = entries.size() - 1; i >= 0 && stoppedBy == null; i--) {
      Journal.Entry entry = journal.entry(entries.get(i).name());
      if (!toUndo(entry)) {
        continue;
      }
      // No compensation starts on a lease that passed: the successor undoes what is left.
      refuseIfLapsed();
      Runnable undo;
      try {
        undo = entry.state() == Journal.State.STARTED ? undoStarted(entry) : undoFor(entry);
      } catch (RuntimeException e) {
        stoppedBy = e; // the reconciler, or the journaled result's codec, failed
        continue;
      }
      if (undo == NOTHING_TO_UNDO) {
        neverRan.add(entry.name());
        continue;
      }
      if (undo == null) {
        stoppedBy = new CompensationFailed("step '" + entry.name() + "' is compensable but was"
            + " neither reached by this attempt nor declared with Once.Builder.steps", null);
        continue;
      }
      try {
        undo.run();
      } catch (LeaseLostException e) {
        throw e;
      } catch (RuntimeException e) {
        stoppedBy = e;
        continue;
      }
      write(journal.with(journal.entry(entry.name()).in(Journal.State.COMPENSATED)),
          "compensation of step " + entry.name());
    }
    List<String> undone = new ArrayList<>();
    List<String> left = new ArrayList<>();
    List<Journal.Entry> now = journal.entries();
    for (int i = now.size() - 1; i >= 0; i--) {
      Journal.Entry entry = now.get(i);
      if (entry.state() == Journal.State.COMPENSATED) {
        undone.add(entry.name());
      } else if (toUndo(entry) && !neverRan.contains(entry.name())) {
        left.add(entry.name());
      }
    }
    if (stoppedBy != null) {
      boolean counted;
      try {
        write(journal.withCompensationFailure(), "a failed compensation");
        counted = true;
      } catch (PayloadTooLargeException e) {
        counted = false; // cannot be counted, so it would never end: final now
      }
      if (counted && journal.compensationFailures() < config.compensationAttempts()) {
        throw stoppedBy;
      }
      LOG.log(System.Logger.Level.WARNING, "compensating the failure of " + key + " failed "
          + journal.compensationFailures() + " times; stored as final, not compensated: "
          + String.join(", ", left), stoppedBy);
    }
    String summary = undone.isEmpty() ? "" : "compensated: " + String.join(", ", undone);
    if (!left.isEmpty()) {
      summary += (summary.isEmpty() ? "" : "; ") + "NOT compensated: " + String.join(", ", left);
    }
    return new Termination(Outcome.failure(type, summary.isEmpty() ? message
        : message + " (" + summary + ")"), List.copyOf(undone), List.copyOf(left));
  }

  /** Says that a step journaled as started is known, by its reconciler, never to have run. */
  private static final Runnable NOTHING_TO_UNDO = () -> { };

  /**
   * How to undo a compensable step journaled as STARTED (its effect may or may not exist): its
   * declared step's reconciler asks the downstream; found, the result is journaled and undone;
   * not found, there is nothing to undo ({@link #NOTHING_TO_UNDO}). Null when the step is not
   * declared with a reconciler and a compensation: then it cannot be known.
   */
  private Runnable undoStarted(Journal.Entry entry) {
    Step<?> declared = config.step(entry.name()).orElse(null);
    if (declared == null || declared.reconciler().isEmpty()
        || declared.compensation().isEmpty()) {
      return null;
    }
    return reconciledUndo(declared);
  }

  private <T> Runnable reconciledUndo(Step<T> step) {
    Optional<T> found = reconcile(step, key.downstreamKey(step.name()));
    if (found.isEmpty()) {
      return NOTHING_TO_UNDO;
    }
    T value = found.get();
    journalResult(step, value); // DONE with what the downstream holds, then undone
    Step.Compensation<T> compensation = step.compensation().orElseThrow();
    return () -> undo(step, compensation, value);
  }

  /**
   * Commits the journal to {@code failure} before the first compensation, so every later attempt
   * ends in it. A failure whose message does not fit the payload bound beside the journal is
   * committed with its message cut, then with none; committing must never be what keeps a
   * failure from being compensated and stored.
   */
  private void commit(Throwable failure) {
    Outcome full = Journal.failureOf(failure);
    String message = full.failureMessage();
    for (int length : new int[] {message.length(), Math.min(message.length(), 100), 0}) {
      try {
        write(journal.withFailure(Outcome.failure(full.failureType(),
            message.substring(0, length))), "the failure being compensated");
        return;
      } catch (PayloadTooLargeException e) {
        // shorter, then without a message
      }
    }
    LOG.log(System.Logger.Level.WARNING, "the failure of " + key + " does not fit beside its"
        + " step journal; compensating without committing it");
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
   * What a terminal failure came to: the failure to store, the steps undone (newest first) and
   * those left undone because compensating them kept failing.
   */
  public record Termination(Outcome outcome, List<String> compensated,
      List<String> notCompensated) {
    /** Whether every compensable step was undone. */
    public boolean fullyCompensated() {
      return notCompensated.isEmpty();
    }
  }

  /** Why compensating stopped: what a compensation threw (checked: wrapped), or a missing one. */
  public static final class CompensationFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CompensationFailed(String message, Exception cause) {
      super(message, cause);
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
   * heartbeat scheduler; else null. Cancelling waits for a beat in flight and no beat starts after
   * it, so the caller may then complete the claim: a beat extending it behind the completion would
   * find the record completed and report a lease lost that was not.
   */
  public Scheduler.Task startHeartbeat() {
    Scheduler scheduler = config.heartbeat();
    if (scheduler == null) {
      return null;
    }
    Duration period = config.lease().dividedBy(3);
    Scheduler.Task task = scheduler.scheduleAtFixedRate(() -> {
      beating.lock();
      try {
        if (!beatsStopped) {
          heartbeat();
        }
      } finally {
        beating.unlock();
      }
    }, period.isZero() ? Duration.ofMillis(1) : period);
    return () -> {
      beating.lock();
      try {
        beatsStopped = true;
      } finally {
        beating.unlock();
      }
      task.cancel();
    };
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
      lostByBeat();
    } catch (RuntimeException e) {
      beatFailed(e);
    }
  }

  /** A batch heartbeat extended this claim: the store's lease now ends at {@code storedUntil}. */
  void extendedTo(Instant storedUntil) {
    if (!leaseLost) {
      leaseUntil = storedUntil.minus(config.clockSkewMargin());
    }
  }

  /** A heartbeat found the record no longer IN_PROGRESS under this claim's token. */
  void lostByBeat() {
    leaseLost = true;
    LOG.log(System.Logger.Level.WARNING, "heartbeat found the lease on {0} lost", key);
    Execution.notify(config.listener(), l -> l.onLeaseLost(key, token));
  }

  /** A heartbeat could not reach the store; the next one tries again. */
  void beatFailed(RuntimeException e) {
    LOG.log(System.Logger.Level.WARNING, "heartbeat could not extend the lease on " + key
        + "; the next beat tries again", e);
    Execution.notify(config.listener(), l -> l.onHeartbeatFailed(key, token, e));
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

  /**
   * Refuses to start work or a step on a lease that has passed by this worker's clock (a thread
   * frozen between its claim and its work, a GC pause, a slow batch): free, no store call. The
   * lease counted here already ends {@code clockSkewMargin} before the store's.
   *
   * @throws LeaseLostException if the lease has passed; the claim is left to its successor
   */
  public void refuseIfLapsed() {
    if (leaseLost || !config.clock().instant().isBefore(leaseUntil)) {
      leaseLost = true;
      throw new LeaseLostException(key, token);
    }
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
