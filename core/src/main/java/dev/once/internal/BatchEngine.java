package dev.once.internal;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.ReplayedFailureException;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.ItemResult;
import dev.once.batch.ItemResult.Status;
import dev.once.batch.MessageHandler;
import dev.once.batch.NoKeyPolicy;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The engine behind {@link dev.once.batch.BatchExecutor}: one batch claim, the handler for each
 * acquired message in order, one batch completion, and what became of each message.
 *
 * <p>Within an ordering group, messages are handled in order until the first one that is not
 * final; the claims acquired for the messages after it are released (FAILED, so the next delivery
 * retakes them at once).
 *
 * <p>With batch claims, the outcomes of the messages whose handler returned are stored together
 * by one {@code completeAll} after the last handler of the batch: a message whose completion was
 * not stored (lease lost, store error) is not final.
 *
 * <p>Every claim is under a live lease until its outcome is stored or it is released, including
 * the claims of messages waiting their turn in the batch: one heartbeat ({@link Leases}) extends
 * all of them when the {@code Once} has a heartbeat scheduler, and each message's lease is checked
 * (extended when less than a third is left) just before its handler runs, so a message whose claim
 * another worker took over in the meantime is not run.
 *
 * <p>Nothing after a handler returns makes it run again: an outcome that could not be stored
 * because the store failed is kept here ({@code unstored}), its claim still held and extended, and
 * stored again at the next heartbeat or batch, before its message is handled again; a redelivery
 * of that message stores the kept outcome instead of running the handler.
 */
public final class BatchEngine<M> {

  private static final System.Logger LOG = System.getLogger(BatchEngine.class.getName());

  /** The settings of one executor, fixed when it is built. */
  public record Settings<M>(MessageHandler<M> handler, Function<M, String> keys,
      Function<M, Fingerprint> fingerprint, NoKeyPolicy noKeyPolicy,
      DeadLetterPublisher<M> deadLetters, int maxAttempts, Duration initialBackoff,
      Duration maxBackoff, Duration inProgressBackoff, boolean batchClaims,
      Function<M, ?> orderedBy, Function<M, ?> messageId) {

    /** The pause before retry number {@code attempt} + 1: doubling from the initial, capped. */
    public Duration backoff(int attempt) {
      Duration pause = initialBackoff;
      for (int i = 1; i < attempt && pause.compareTo(maxBackoff) < 0; i++) {
        pause = pause.multipliedBy(2);
      }
      return pause.compareTo(maxBackoff) <= 0 ? pause : maxBackoff;
    }
  }

  private final Once.Config config;
  /** The store, each call told to the listener (onStoreCall) as Once's own calls are. */
  private final StoreCalls store;
  private final Settings<M> settings;
  private final Outcome emptyOutcome;
  /** Failures of messages processed without a key, counted in memory (there is no record). */
  private final Map<Object, Integer> unprotectedAttempts = new ConcurrentHashMap<>();
  /** The claims held (acquired, not yet stored or released) and their heartbeat. */
  private final Leases leases;
  /**
   * Outcomes of handlers that returned but that the store failed to take, by key: their claims
   * stay held (and extended) until a later try stores them. Shared by the threads of a consumer.
   */
  private final Map<IdempotencyKey, Unstored> unstored = new ConcurrentHashMap<>();
  /** One retry of the unstored outcomes at a time (the heartbeat and the batches both retry). */
  private final Object storingUnstored = new Object();

  public BatchEngine(Once.Config config, Settings<M> settings) {
    this.config = config;
    this.store = new StoreCalls(config.store(), config.listener());
    this.settings = settings;
    this.emptyOutcome = Outcome.encode(Codecs.none(), null, Integer.MAX_VALUE, "a message");
    this.leases = new Leases(config, store, this::storeUnstored);
  }

  private Instant now() {
    return config.clock().instant();
  }

  /** Processes {@code messages}; see {@link dev.once.batch.BatchExecutor#process}. */
  public BatchOutcome<M> process(List<M> messages, String scope, BooleanSupplier stop) {
    Batch<M> batch = new Batch<>(messages);
    if (messages.isEmpty()) {
      return batch.outcome();
    }
    // Outcomes an earlier batch could not store come first: a redelivery of their messages is
    // then a replay, not a second run.
    storeUnstored();
    try {
      process(scope, stop, batch);
    } finally {
      // Whatever happened, no claim of this batch stays held unless its outcome is kept unstored.
      for (AttemptImpl attempt : batch.attempts) {
        Unstored kept = unstored.get(attempt.idempotencyKey());
        if (kept == null || kept.attempt != attempt) {
          leases.drop(attempt);
        }
      }
    }
    return batch.outcome();
  }

  private void process(String scope, BooleanSupplier stop, Batch<M> batch) {
    int n = batch.messages.size();
    Item[] items = new Item[n];
    Claim[] claims = new Claim[n];
    AttemptImpl[] attempts = new AttemptImpl[n];
    List<ClaimRequest> requests = new ArrayList<>();
    List<Integer> requestIndex = new ArrayList<>();
    Instant now = now();
    for (int i = 0; i < n; i++) {
      items[i] = identify(batch.messages.get(i), scope);
      if (items[i].key != null && settings.batchClaims()) {
        requests.add(request(items[i], now));
        requestIndex.add(i);
      }
    }

    if (!requests.isEmpty()) {
      List<Claim> answers;
      try {
        // The point of the batch: one store round trip for every key of the batch.
        answers = store.claimAll(requests);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "batch claim of " + requests.size()
            + " messages failed; the batch will be delivered again", e);
        Instant retryAt = now.plus(settings.initialBackoff());
        for (int i = 0; i < n; i++) {
          batch.set(i, items[i].key, Step.notFinal(Status.NOT_RUN, retryAt, e, 0));
        }
        return;
      }
      if (answers.size() != requests.size()) {
        throw new IllegalStateException("the store answered " + answers.size() + " claims to "
            + requests.size() + " requests");
      }
      for (int j = 0; j < answers.size(); j++) {
        int i = requestIndex.get(j);
        claims[i] = answers.get(j);
        if (claims[i] instanceof Claim.Acquired acquired) {
          // Held from now on, not from when its handler starts: a message waiting its turn keeps
          // its lease while the messages before it are handled.
          attempts[i] = hold(items[i].key, acquired, batch);
        }
      }
    }

    // Keys acquired earlier in this batch: true once final (or awaiting its completion). A later
    // duplicate in the same batch was answered InProgress (by our own claim) and follows the fate
    // of the first.
    Map<IdempotencyKey, Boolean> ownedHere = new HashMap<>();
    // Groups with a message that is not final, and when that message comes again: the rest of
    // the group cannot run before it.
    Map<Object, Instant> blockedGroups = new HashMap<>();
    boolean stopping = false;
    try {
      for (int i = 0; i < n; i++) {
        M message = batch.messages.get(i);
        Object group = items[i].group;
        if (!stopping && stopRequested(stop)) {
          stopping = true;
        }
        Instant blockedUntil = group == null ? null : blockedGroups.get(group);
        if (stopping || blockedUntil != null) {
          if (attempts[i] != null) {
            letGo(attempts[i], stopping ? "released unprocessed: the consumer stopped"
                : "released unprocessed: an earlier message of its group is not final");
          }
          batch.set(i, items[i].key, Step.notFinal(Status.NOT_RUN,
              blockedUntil != null ? blockedUntil : now(), null, 0));
          continue;
        }
        Step step = handle(message, items[i], claims[i], attempts[i], ownedHere, batch);
        batch.set(i, items[i].key, step);
        if (step.retryAt != null && group != null) {
          blockedGroups.put(group, step.retryAt);
        }
      }
    } catch (Throwable fatal) {
      // A handler's Error (the process is going down) or a bug: the outcomes of the messages
      // already handled are stored first, as they would have been one by one, before anything
      // else happens; the claims not run are left to their leases.
      storePending(batch, !(fatal instanceof Error));
      throw fatal;
    }
    Map<IdempotencyKey, Status> notStored = storePending(batch, true);
    settle(notStored, batch);
  }

  /** Asks the adapter's stop condition; one that throws is taken as a stop (logged). */
  private static boolean stopRequested(BooleanSupplier stop) {
    try {
      return stop.getAsBoolean();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "the stop condition threw; stopping the batch", e);
      return true;
    }
  }

  /**
   * Stores the outcomes awaiting completion with one {@code completeAll}. When the store fails,
   * the outcomes are kept ({@code keep}) with their claims held, to be stored before their
   * messages run again.
   *
   * @return the keys whose outcome was not stored: LEASE_LOST, or OUTCOME_PENDING (kept)
   */
  private Map<IdempotencyKey, Status> storePending(Batch<M> batch, boolean keep) {
    if (batch.pending.isEmpty()) {
      return Map.of();
    }
    List<Completion> completions = new ArrayList<>(batch.pending.size());
    for (Pending p : batch.pending.values()) {
      leases.drop(p.attempt); // no beat may extend a message while it is being completed
      completions.add(new Completion(p.key(), p.token(), p.outcome));
    }
    Map<IdempotencyKey, Status> notStored = new HashMap<>();
    try {
      // The point of the batch, again: one store round trip for every outcome of the batch.
      Set<IdempotencyKey> lost = store.completeAll(completions, now(), config.retention());
      for (IdempotencyKey key : lost) {
        Pending p = batch.pending.get(key);
        notify(l -> l.onLeaseLost(key, p.token()));
        LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost before completion: another"
            + " worker took over; the message will be delivered again", key);
        notStored.put(key, Status.LEASE_LOST);
      }
    } catch (RuntimeException e) {
      if (!keep) {
        LOG.log(System.Logger.Level.WARNING, "could not store the outcomes of "
            + completions.size() + " messages", e);
        return Map.of();
      }
      // The handlers returned: their work must not run again because the store failed now. The
      // outcomes stay here with their claims held (extended by the heartbeat, if any) and are
      // stored before these messages are handled again (storeUnstored).
      LOG.log(System.Logger.Level.WARNING, "could not store the outcomes of "
          + completions.size() + " messages; they are kept with their claims and stored again"
          + " before their messages are handled again", e);
      for (Pending p : batch.pending.values()) {
        keep(p.attempt, p.outcome, p.started);
        notStored.put(p.key(), Status.OUTCOME_PENDING);
      }
      batch.storeFailure = e;
      return notStored;
    }
    for (Pending p : batch.pending.values()) {
      if (!notStored.containsKey(p.key())) {
        Duration elapsed = Duration.ofNanos(System.nanoTime() - p.started);
        notify(l -> l.onCompleted(p.key(), p.token(), elapsed));
      }
    }
    return notStored;
  }

  /** Keeps the outcome of {@code attempt}, whose storing failed, with its claim held. */
  private void keep(AttemptImpl attempt, Outcome outcome, long started) {
    unstored.put(attempt.idempotencyKey(), new Unstored(attempt, outcome, started));
    leases.hold(attempt);
  }

  /**
   * Tries again to store the kept outcomes, with one {@code completeAll}; called before each batch
   * and at each heartbeat. Those stored, or refused because another worker took the key over, are
   * forgotten; the others stay kept (and held) for the next try.
   */
  private void storeUnstored() {
    if (unstored.isEmpty()) {
      return;
    }
    synchronized (storingUnstored) {
      List<Unstored> kept = List.copyOf(unstored.values());
      if (kept.isEmpty()) {
        return;
      }
      List<Completion> completions = new ArrayList<>(kept.size());
      for (Unstored u : kept) {
        leases.drop(u.attempt); // as in storePending: no beat while it is being completed
        completions.add(new Completion(u.key(), u.attempt.token(), u.outcome));
      }
      Set<IdempotencyKey> lost;
      try {
        lost = store.completeAll(completions, now(), config.retention());
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "still cannot store the outcomes of " + kept.size()
            + " messages; trying again at the next heartbeat or batch", e);
        for (Unstored u : kept) {
          // Atomically with the entry: a thread that removed it (and dropped its claim) between
          // a check and a hold would leave the claim held, and beaten, forever.
          unstored.computeIfPresent(u.key(), (k, current) -> {
            if (current == u) {
              leases.hold(u.attempt);
            }
            return current;
          });
        }
        return;
      }
      for (Unstored u : kept) {
        unstored.remove(u.key(), u);
        if (lost.contains(u.key())) {
          // Taken over after the lease passed (no heartbeat, or a long outage), or stored by the
          // call that failed: either way the key's record now says what happened.
          LOG.log(System.Logger.Level.INFO, "kept outcome of {0} not stored: the record is no"
              + " longer in progress under token {1}", u.key(), u.attempt.token());
        } else {
          long token = u.attempt.token();
          Duration elapsed = Duration.ofNanos(System.nanoTime() - u.started);
          notify(l -> l.onCompleted(u.key(), token, elapsed));
        }
      }
    }
  }

  /**
   * Decides what became of the messages awaiting the batch's completion: final once stored; the
   * status of the completion (and a redelivery, for a duplicate following it) when not.
   */
  private void settle(Map<IdempotencyKey, Status> notStored, Batch<M> batch) {
    for (int i = 0; i < batch.steps.length; i++) {
      Step step = batch.steps[i];
      if (step.awaiting == null) {
        continue;
      }
      Status failed = notStored.get(step.awaiting);
      Pending owner = batch.pending.get(step.awaiting);
      int attempt = owner == null ? 0 : owner.attempt.attemptNumber();
      if (failed != null) {
        Instant retryAt = now().plus(settings.initialBackoff());
        batch.steps[i] = step.status == Status.HANDLED
            ? Step.notFinal(failed, retryAt, batch.storeFailure, attempt)
            : Step.notFinal(Status.NOT_RUN, retryAt, null, 0);
      } else {
        if (step.status == Status.REPLAYED) {
          notify(l -> l.onReplayed(step.awaiting));
        }
        batch.steps[i] = Step.done(step.status, step.status == Status.HANDLED ? attempt : 0);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * The message's key, fingerprint and ordering group, each from a user function that may throw:
   * a function that throws (or a key that is null or invalid) fails this message alone, which is
   * then one without a key ({@link NoKeyPolicy}).
   */
  private Item identify(M message, String scope) {
    Object group;
    String raw;
    try {
      group = settings.orderedBy() == null ? null : settings.orderedBy().apply(message);
      raw = settings.keys().apply(message);
    } catch (RuntimeException e) {
      return Item.none(e);
    }
    if (raw == null) {
      return Item.none(new InvalidKeyException("no idempotency key: the derivation found none"));
    }
    try {
      IdempotencyKey key = IdempotencyKey.of(scope, raw);
      Fingerprint fingerprint = settings.fingerprint().apply(message);
      if (fingerprint == null) {
        throw new IllegalStateException("the fingerprint function returned null");
      }
      return new Item(key, fingerprint, group, null);
    } catch (RuntimeException e) {
      return Item.none(e);
    }
  }

  private ClaimRequest request(Item item, Instant now) {
    return new ClaimRequest(item.key, item.fingerprint, now, config.storedLease(),
        config.retention());
  }

  private Step handle(M message, Item item, Claim claim, AttemptImpl attempt,
      Map<IdempotencyKey, Boolean> ownedHere, Batch<M> batch) {
    if (item.key == null) {
      return withoutKey(message, item.noKeyCause);
    }
    if (claim == null) {
      try {
        claim = store.claim(request(item, now()));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "claim of " + item.key + " failed; retrying later", e);
        return Step.notFinal(Status.NOT_RUN, now().plus(settings.initialBackoff()), e, 0);
      }
      if (claim instanceof Claim.Acquired acquired) {
        attempt = hold(item.key, acquired, batch);
      }
    }
    IdempotencyKey key = item.key;
    if (claim instanceof Claim.Replay) {
      forgetUnstored(key); // stored meanwhile: nothing left to keep
      notify(l -> l.onReplayed(key));
      return Step.done(Status.REPLAYED, 0);
    }
    if (claim instanceof Claim.Mismatch) {
      notify(l -> l.onMismatch(key));
      KeyReusedException e = new KeyReusedException(key);
      return deadLetter(new DeadLetter<>(message, DeadLetter.Reason.KEY_REUSED, key,
          e.getClass().getName(), e.getMessage(), 0), e);
    }
    if (claim instanceof Claim.InProgress inProgress) {
      Boolean ownFinal = ownedHere.get(key);
      if (ownFinal != null) {
        if (ownFinal && batch.pending.containsKey(key)) {
          return Step.awaiting(key, Status.REPLAYED);
        }
        if (ownFinal) {
          notify(l -> l.onReplayed(key));
          return Step.done(Status.REPLAYED, 0);
        }
        return Step.notFinal(Status.NOT_RUN, now().plus(settings.initialBackoff()), null, 0);
      }
      if (unstored.containsKey(key)) {
        // Our own claim: the handler returned in an earlier batch and its outcome is kept until
        // the store takes it. Not run again; delivered again once it is stored (then a replay).
        return Step.notFinal(Status.OUTCOME_PENDING, now().plus(settings.initialBackoff()), null,
            0);
      }
      notify(l -> l.onInProgress(key));
      // Held by another worker (typically around a rebalance): look again after a backoff, or
      // when its lease ends, where a takeover becomes possible, whichever comes first.
      Instant at = now().plus(settings.inProgressBackoff());
      return Step.notFinal(Status.IN_PROGRESS,
          inProgress.leaseUntil().isBefore(at) ? inProgress.leaseUntil() : at, null, 0);
    }
    Claim.Acquired acquired = (Claim.Acquired) claim;
    Unstored kept = unstored.remove(key);
    Step step;
    if (kept != null) {
      // The handler ran here and returned, but its outcome was not stored and its claim lapsed
      // (no heartbeat, or a long outage) before this claim retook the key: store the kept
      // outcome under the new claim instead of running the handler again.
      leases.drop(kept.attempt);
      LOG.log(System.Logger.Level.INFO, "{0} was handled already; storing its kept outcome"
          + " instead of running it again", key);
      step = returned(key, attempt, kept.outcome, kept.started, batch);
    } else {
      step = run(message, key, acquired, attempt, batch);
    }
    ownedHere.put(key, step.retryAt == null);
    return step;
  }

  /** Holds the claim of {@code key} from now until its outcome is stored or it is released. */
  private AttemptImpl hold(IdempotencyKey key, Claim.Acquired acquired, Batch<M> batch) {
    AttemptImpl attempt = new AttemptImpl(key, acquired, config, store);
    leases.hold(attempt);
    batch.attempts.add(attempt);
    return attempt;
  }

  /** Forgets a kept outcome of {@code key} whose record was completed meanwhile. */
  private void forgetUnstored(IdempotencyKey key) {
    Unstored kept = unstored.remove(key);
    if (kept != null) {
      leases.drop(kept.attempt);
    }
  }

  private Step run(M message, IdempotencyKey key, Claim.Acquired acquired, AttemptImpl attempt,
      Batch<M> batch) {
    long token = acquired.token();
    notify(l -> l.onAcquired(key, token, acquired.takeover()));
    try {
      // The claim was taken with the batch and the messages before this one may have been slow:
      // make sure it is still ours, and start the handler with at least a third of the lease
      // ahead (extended, under the token, when less is left).
      attempt.ensureLease();
    } catch (LeaseLostException e) {
      leases.drop(attempt);
      notify(l -> l.onLeaseLost(key, token));
      LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost while the message waited its"
          + " turn: another worker took over; not run here, it will be delivered again", key);
      return Step.notFinal(Status.LEASE_LOST, now().plus(settings.initialBackoff()), e, 0);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not extend the lease on " + key
          + " before running it; not run, it will be delivered again", e);
      letGo(attempt, "released unprocessed: its lease could not be extended");
      return Step.notFinal(Status.NOT_RUN, now().plus(settings.initialBackoff()), e, 0);
    }
    long started = System.nanoTime();
    try {
      settings.handler().handle(message, attempt);
    } catch (Exception failure) {
      // Still held: the lease is renewed while compensations run and the dead letter is
      // published; failed() lets go only once what became of the message is stored.
      return failed(message, key, acquired, attempt, failure);
    } catch (Error fatal) {
      // The process is going down: record nothing, as a killed process could not either. The
      // lease runs out and the next worker takes over.
      leases.drop(attempt);
      throw fatal;
    }
    ReplayedFailureException committed = attempt.committedFailure();
    if (committed != null) {
      // An earlier attempt began compensating a terminal failure of the steps: it ends so.
      return failed(message, key, acquired, attempt, committed);
    }
    return returned(key, attempt, emptyOutcome, started, batch);
  }

  /** The handler returned: its outcome is stored with the batch, or at once, or kept. */
  private Step returned(IdempotencyKey key, AttemptImpl attempt, Outcome outcome, long started,
      Batch<M> batch) {
    if (settings.batchClaims()) {
      // Stored with the rest of the batch (storePending); the claim stays held until then.
      batch.pending.put(key, new Pending(attempt, outcome, started));
      return Step.awaiting(key, Status.HANDLED);
    }
    long token = attempt.token();
    leases.drop(attempt);
    try {
      store.complete(key, token, outcome, now(), config.retention());
    } catch (LeaseLostException e) {
      notify(l -> l.onLeaseLost(key, token));
      LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost before completion: another"
          + " worker took over; the message will be delivered again", key);
      return Step.notFinal(Status.LEASE_LOST, now().plus(settings.initialBackoff()), e,
          attempt.attemptNumber());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not store the outcome of " + key
          + "; kept with its claim, stored before the message is handled again", e);
      keep(attempt, outcome, started);
      return Step.notFinal(Status.OUTCOME_PENDING, now().plus(settings.initialBackoff()), e,
          attempt.attemptNumber());
    }
    Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
    notify(l -> l.onCompleted(key, token, elapsed));
    return Step.done(Status.HANDLED, attempt.attemptNumber());
  }

  /**
   * The handler threw. Its claim is held (renewed by the heartbeat) until the end: through the
   * compensations and the dead letter's publication, dropped just before the failure is stored or
   * the claim released, so a slow broker cannot let another worker take the message over.
   */
  private Step failed(M message, IdempotencyKey key, Claim.Acquired acquired,
      AttemptImpl attempt, Exception failure) {
    long token = acquired.token();
    int number = acquired.attempt();
    if (failure instanceof LeaseLostException) {
      leases.drop(attempt);
      notify(l -> l.onLeaseLost(key, token));
      return Step.notFinal(Status.LEASE_LOST, now().plus(settings.initialBackoff()), failure,
          number);
    }
    boolean terminal = attempt.committedFailure() != null
        || config.failurePolicy().isTerminal(failure);
    boolean exhausted = !terminal && number >= settings.maxAttempts();
    notify(l -> l.onFailed(key, token, failure, terminal || exhausted));
    if (!terminal && !exhausted) {
      giveBack(attempt, Execution.describe(failure));
      return Step.notFinal(Status.RETRY, now().plus(settings.backoff(number)), failure, number);
    }
    AttemptImpl.Termination termination;
    try {
      // The steps the handler completed are undone (each once) before the failure is final.
      termination = attempt.terminate(failure);
    } catch (RuntimeException compensationFailure) {
      LOG.log(System.Logger.Level.WARNING, "compensating the failure of " + key + " failed;"
          + " released, the message will be delivered again", compensationFailure);
      giveBack(attempt, "compensation failed: " + compensationFailure.getMessage());
      failure.addSuppressed(compensationFailure);
      return Step.notFinal(Status.RETRY, now().plus(settings.backoff(number)), failure, number);
    }
    DeadLetter.Reason reason = !termination.fullyCompensated()
        ? DeadLetter.Reason.COMPENSATION_FAILED
        : terminal ? DeadLetter.Reason.TERMINAL_FAILURE : DeadLetter.Reason.RETRIES_EXHAUSTED;
    Outcome outcome = termination.outcome();
    DeadLetter<M> letter = new DeadLetter<>(message, reason, key,
        failure.getClass().getName(), reason == DeadLetter.Reason.COMPENSATION_FAILED
            ? outcome.failureMessage() : failure.getMessage(), number);
    try {
      // Without a heartbeat, make sure the publication starts with a lease ahead.
      attempt.ensureLease();
    } catch (LeaseLostException e) {
      leases.drop(attempt);
      notify(l -> l.onLeaseLost(key, token));
      return Step.notFinal(Status.LEASE_LOST, now().plus(settings.initialBackoff()), e, number);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not extend the lease on " + key
          + " before publishing its dead letter", e);
    }
    // Dead letter first, then the stored failure: a crash in between re-runs the message after
    // the lease (the dead letter may then be published twice) but never loses it.
    if (!publish(letter, key)) {
      giveBack(attempt, Execution.describe(failure));
      return Step.notFinal(Status.RETRY, now().plus(settings.backoff(number)), failure, number);
    }
    leases.drop(attempt); // no beat may extend it while it is being completed
    try {
      store.complete(key, token, outcome, now(), config.retention());
    } catch (LeaseLostException e) {
      notify(l -> l.onLeaseLost(key, token));
      return Step.notFinal(Status.LEASE_LOST, now().plus(settings.initialBackoff()), e, number);
    } catch (RuntimeException e) {
      // Dead-lettered already: keep the stored failure to come, as for an outcome (above).
      LOG.log(System.Logger.Level.WARNING, "could not store the failure of " + key
          + "; kept with its claim, stored before the message is handled again", e);
      keep(attempt, outcome, System.nanoTime());
      return Step.notFinal(Status.OUTCOME_PENDING, now().plus(settings.initialBackoff()), e,
          number);
    }
    return new Step(Status.DEAD_LETTERED, null, null, reason, failure, number);
  }

  private Step withoutKey(M message, RuntimeException cause) {
    if (settings.noKeyPolicy() == NoKeyPolicy.DEAD_LETTER) {
      LOG.log(System.Logger.Level.WARNING, "a message has no idempotency key ({0});"
          + " dead-lettered", cause.getMessage());
      return deadLetter(new DeadLetter<>(message, DeadLetter.Reason.NO_KEY, null,
          cause.getClass().getName(), cause.getMessage(), 0), cause);
    }
    Object id;
    try {
      id = settings.messageId().apply(message);
    } catch (RuntimeException e) {
      // Its failures could not be counted, so it could be retried forever: given up on.
      e.addSuppressed(cause);
      LOG.log(System.Logger.Level.WARNING, "a message has no idempotency key and its message id"
          + " function threw ({0}); dead-lettered", e.getMessage());
      return deadLetter(new DeadLetter<>(message, DeadLetter.Reason.NO_KEY, null,
          e.getClass().getName(), e.getMessage(), 0), e);
    }
    LOG.log(System.Logger.Level.WARNING, "a message has no idempotency key ({0});"
        + " processed without protection", cause.getMessage());
    try {
      settings.handler().handle(message, null);
    } catch (Exception failure) {
      int attempts = unprotectedAttempts.merge(id, 1, Integer::sum);
      boolean terminal = config.failurePolicy().isTerminal(failure);
      if (!terminal && attempts < settings.maxAttempts()) {
        return Step.notFinal(Status.RETRY, now().plus(settings.backoff(attempts)), failure,
            attempts);
      }
      Step step = deadLetter(new DeadLetter<>(message, terminal
          ? DeadLetter.Reason.TERMINAL_FAILURE : DeadLetter.Reason.RETRIES_EXHAUSTED, null,
          failure.getClass().getName(), failure.getMessage(), attempts), failure);
      if (step.retryAt == null) {
        unprotectedAttempts.remove(id);
      }
      return step;
    }
    unprotectedAttempts.remove(id);
    return Step.done(Status.HANDLED, 0);
  }

  /** Publishes a dead letter for a message that is then final, or asks for a retry. */
  private Step deadLetter(DeadLetter<M> letter, Throwable cause) {
    if (!publish(letter, null)) {
      return Step.notFinal(Status.RETRY, now().plus(settings.initialBackoff()), cause,
          letter.attempts());
    }
    return new Step(Status.DEAD_LETTERED, null, null, letter.reason(), cause, letter.attempts());
  }

  /** Publishes a dead letter; false (logged) when it could not be. */
  private boolean publish(DeadLetter<M> letter, IdempotencyKey key) {
    try {
      settings.deadLetters().publish(letter);
      return true;
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      LOG.log(System.Logger.Level.WARNING, "could not publish the dead letter ("
          + letter.reason() + ") of " + (key == null ? "a message" : key.toString())
          + "; it will be delivered again", e);
      return false;
    }
  }

  /**
   * Stops holding a claim whose handler never ran and gives it back (FAILED, the attempt not
   * counted), so the next delivery retakes it at once with the same attempt number.
   */
  private void letGo(AttemptImpl attempt, String why) {
    leases.drop(attempt);
    try {
      store.release(attempt.idempotencyKey(), attempt.token(), why, now(), config.retention());
    } catch (RuntimeException e) {
      // The lease runs out instead; the next delivery takes over then.
      LOG.log(System.Logger.Level.DEBUG, "could not release " + attempt.idempotencyKey(), e);
    }
  }

  /**
   * Stops holding a claim whose handler failed and records the failure (FAILED, retryable, the
   * attempt counted), so the next delivery retakes it at once.
   */
  private void giveBack(AttemptImpl attempt, String why) {
    leases.drop(attempt);
    try {
      store.fail(attempt.idempotencyKey(), attempt.token(), why, now(), config.retention());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not record the failure of "
          + attempt.idempotencyKey(), e);
    }
  }

  private void notify(Consumer<OnceListener> event) {
    Execution.notify(config.listener(), event);
  }

  // ---------------------------------------------------------------------------------------------

  /** What the batch came to, gathered while processing. */
  private static final class Batch<M> {
    final List<M> messages;
    final Step[] steps;
    final IdempotencyKey[] keys;
    /** Handled messages whose outcome awaits the batch's completeAll, in handling order. */
    final Map<IdempotencyKey, Pending> pending = new LinkedHashMap<>();
    /** Every claim acquired in this batch (each held until stored, released or kept). */
    final List<AttemptImpl> attempts = new ArrayList<>();
    /** Why the batch's completeAll failed, if it did. */
    RuntimeException storeFailure;

    Batch(List<M> messages) {
      this.messages = List.copyOf(messages);
      this.steps = new Step[messages.size()];
      this.keys = new IdempotencyKey[messages.size()];
    }

    void set(int i, IdempotencyKey key, Step step) {
      steps[i] = step;
      keys[i] = key;
    }

    BatchOutcome<M> outcome() {
      List<ItemResult<M>> items = new ArrayList<>(steps.length);
      for (int i = 0; i < steps.length; i++) {
        Step s = steps[i];
        if (s == null || s.awaiting != null) {
          // Never reached: the batch ended early (a failed claim fills every step; this guards).
          throw new IllegalStateException("message " + i + " of the batch has no result; steps "
              + Arrays.toString(steps));
        }
        items.add(new ItemResult<>(i, messages.get(i), keys[i], s.status, s.retryAt, s.failure,
            s.attempt, s.reason));
      }
      return new BatchOutcome<>(items);
    }
  }

  /** A message's key and fingerprint, or why it has none. */
  private record Item(IdempotencyKey key, Fingerprint fingerprint, Object group,
      RuntimeException noKeyCause) {
    static Item none(RuntimeException cause) {
      return new Item(null, null, null, cause);
    }
  }

  /**
   * What became of one message: final or to be delivered again from {@code retryAt}; or, while
   * the batch runs, awaiting the batch's completion of {@code awaiting} to become
   * {@code status}.
   */
  private record Step(Status status, Instant retryAt, IdempotencyKey awaiting,
      DeadLetter.Reason reason, Throwable failure, int attempt) {

    static Step done(Status status, int attempt) {
      return new Step(status, null, null, null, null, attempt);
    }

    static Step notFinal(Status status, Instant retryAt, Throwable failure, int attempt) {
      return new Step(status, retryAt, null, null, failure, attempt);
    }

    static Step awaiting(IdempotencyKey key, Status status) {
      return new Step(status, null, key, null, null, 0);
    }
  }

  /** A handled message whose outcome is stored with the rest of the batch. */
  private record Pending(AttemptImpl attempt, Outcome outcome, long started) {
    IdempotencyKey key() {
      return attempt.idempotencyKey();
    }

    long token() {
      return attempt.token();
    }
  }

  /** An outcome the store failed to take, kept with its (held) claim until a retry stores it. */
  private record Unstored(AttemptImpl attempt, Outcome outcome, long started) {
    IdempotencyKey key() {
      return attempt.idempotencyKey();
    }
  }
}
