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
import dev.once.batch.BatchConfig;
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
import dev.once.support.RepeatedFailureLog;
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
  /** A store outage fails every batch alike: one stack trace, then a count per minute. */
  private final RepeatedFailureLog outages = RepeatedFailureLog.of(LOG);

  /** The settings of one executor, fixed when it is built. */
  public record Settings<M>(MessageHandler<M> handler, Function<M, String> keys,
      Function<M, Fingerprint> fingerprint, DeadLetterPublisher<M> deadLetters,
      BatchConfig config, Function<M, ?> orderedBy, Function<M, ?> messageId) {}

  private final Once.Config config;
  /** The store, each call told to the listener (onStoreCall) as Once's own calls are. */
  private final StoreCalls store;
  private final Settings<M> settings;
  private final Outcome emptyOutcome;
  /** Failures of messages processed without a key, counted in memory (there is no record). */
  private final Map<Object, Integer> unprotectedAttempts = new ConcurrentHashMap<>();
  /** The claims held (acquired, not yet stored or released) and their heartbeat. */
  private final Leases leases;
  /** Outcomes the store failed to take, kept with their claims held until stored. */
  private final UnstoredOutcomes unstored;
  /** Where messages given up on go. */
  private final DeadLetterPublication<M> deadLetters;

  public BatchEngine(Once.Config config, Settings<M> settings) {
    this.config = config;
    this.store = new StoreCalls(config.store(), config.listener(), config.ticker());
    this.settings = settings;
    this.emptyOutcome = Outcome.encode(Codecs.none(), null, Integer.MAX_VALUE, "a message");
    // The heartbeat tries the kept outcomes again first.
    this.leases = new Leases(config, store, this::storeKept);
    this.unstored = new UnstoredOutcomes(config, store, leases);
    this.deadLetters = new DeadLetterPublication<>(settings.deadLetters());
  }

  private void storeKept() {
    unstored.storeAll();
  }

  private Instant now() {
    return config.clock().instant();
  }

  /** Processes {@code messages}; see {@link dev.once.batch.BatchExecutor#process}. */
  public BatchOutcome<M> process(List<M> messages, String scope, BooleanSupplier stop) {
    BatchRun<M> batch = new BatchRun<>(messages);
    if (messages.isEmpty()) {
      return batch.outcome();
    }
    // Outcomes an earlier batch could not store come first: a redelivery of their messages is
    // then a replay, not a second run.
    unstored.storeAll();
    try {
      process(scope, stop, batch);
    } finally {
      batch.endCalls();
      // Whatever happened, no claim of this batch stays held unless its outcome is kept unstored.
      for (AttemptImpl attempt : batch.attempts) {
        if (!unstored.keepsOutcomeOf(attempt)) {
          leases.drop(attempt);
        }
      }
    }
    return batch.outcome();
  }

  private void process(String scope, BooleanSupplier stop, BatchRun<M> batch) {
    int n = batch.messages.size();
    Item[] items = new Item[n];
    Claim[] claims = new Claim[n];
    AttemptImpl[] attempts = new AttemptImpl[n];
    /** Claims whose step journal this version cannot read: given back, not run here. */
    RuntimeException[] unreadable = new RuntimeException[n];
    List<ClaimRequest> requests = new ArrayList<>();
    List<Integer> requestIndex = new ArrayList<>();
    Instant now = now();
    for (int i = 0; i < n; i++) {
      items[i] = identify(batch.messages.get(i), scope);
      if (items[i].key != null) {
        batch.calls[i] = CallEvents.start(config.listener(), config.ticker(), items[i].key);
      }
      if (items[i].key != null && settings.config().batchClaims()) {
        requests.add(request(items[i], now));
        requestIndex.add(i);
      }
    }

    if (!requests.isEmpty()) {
      List<Claim> answers;
      try {
        // The point of the batch: one store round trip for every key of the batch.
        List<CallEvents> claiming = new ArrayList<>(requests.size());
        for (int i : requestIndex) {
          claiming.add(batch.calls[i]);
        }
        answers = store.claimAll(requests, claiming);
      } catch (RuntimeException e) {
        outages.log(System.Logger.Level.WARNING, "batch claim of " + requests.size()
            + " messages failed; the batch will be delivered again", e);
        Instant retryAt = now.plus(settings.config().initialBackoff());
        for (int i = 0; i < n; i++) {
          batch.set(i, items[i].key, Disposition.notFinal(Status.NOT_RUN, retryAt, e, 0));
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
          try {
            attempts[i] = hold(items[i].key, acquired, batch, batch.calls[i]);
          } catch (RuntimeException e) {
            unreadable[i] = e;
            giveBackUnreadable(items[i].key, acquired, e, batch.calls[i]);
          }
        }
      }
    }

    // Keys acquired earlier in this batch: true once final (or awaiting its completion). A later
    // duplicate in the same batch was answered InProgress (by our own claim) and follows the fate
    // of the first.
    Map<IdempotencyKey, Boolean> ownedHere = new HashMap<>();
    // Groups with a message that is not final, and when that message comes again: the rest of
    // the group cannot run before it.
    OrderingGroups groups = new OrderingGroups();
    boolean stopping = false;
    int reached = 0;
    try {
      for (int i = 0; i < n; i++, reached = i) {
        M message = batch.messages.get(i);
        Object group = items[i].group;
        if (!stopping && stopRequested(stop)) {
          stopping = true;
        }
        Instant blockedUntil = groups.blockedUntil(group);
        if (stopping || blockedUntil != null) {
          if (attempts[i] != null) {
            leases.release(attempts[i], stopping ? "released unprocessed: the consumer stopped"
                : "released unprocessed: an earlier message of its group is not final");
          }
          batch.set(i, items[i].key, Disposition.notFinal(Status.NOT_RUN,
              blockedUntil != null ? blockedUntil : now(), null, 0));
          continue;
        }
        Disposition disposition = unreadable[i] != null
            ? Disposition.notFinal(Status.NOT_RUN, now().plus(settings.config().initialBackoff()),
                unreadable[i], 0)
            : handle(message, items[i], claims[i], attempts[i], ownedHere, batch, batch.calls[i]);
        batch.set(i, items[i].key, disposition);
        groups.settled(group, disposition);
      }
    } catch (Throwable fatal) {
      // A handler's Error (the process is going down) or a bug: the outcomes of the messages
      // already handled are stored first, as they would have been one by one, before anything
      // else happens. The message being handled is left to its lease (whether its handler ran
      // is not known); on anything but an Error the claims not reached are given back.
      // The message in hand ends in the error (unless its handler's Error ended it already).
      if (reached < n && batch.dispositions[reached] == null && batch.calls[reached] != null) {
        batch.calls[reached].end(OnceListener.CallOutcome.ERROR, fatal);
      }
      storePending(batch, !(fatal instanceof Error));
      if (!(fatal instanceof Error)) {
        for (int k = reached + 1; k < n; k++) {
          if (attempts[k] != null) {
            leases.release(attempts[k], "released unprocessed: the batch ended early ("
                + fatal + ")");
          }
        }
      }
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
  private Map<IdempotencyKey, Status> storePending(BatchRun<M> batch, boolean keep) {
    if (batch.pending.isEmpty()) {
      return Map.of();
    }
    List<Completion> completions = new ArrayList<>(batch.pending.size());
    List<CallEvents> completing = new ArrayList<>(batch.pending.size());
    for (BatchRun.Pending p : batch.pending.values()) {
      leases.drop(p.attempt()); // no beat may extend a message while it is being completed
      completions.add(new Completion(p.key(), p.token(), p.outcome()));
      completing.add(p.events());
    }
    Map<IdempotencyKey, Status> notStored = new HashMap<>();
    try {
      // The point of the batch, again: one store round trip for every outcome of the batch.
      Set<IdempotencyKey> lost = store.completeAll(completions, now(), config.retention(),
          completing);
      for (IdempotencyKey key : lost) {
        BatchRun.Pending p = batch.pending.get(key);
        p.events().tell(l -> l.onLeaseLost(key, p.token()));
        LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost before completion: another"
            + " worker took over; the message will be delivered again", key);
        notStored.put(key, Status.LEASE_LOST);
      }
    } catch (RuntimeException e) {
      if (!keep) {
        LOG.log(System.Logger.Level.WARNING, "could not store the outcomes of "
            + completions.size() + " messages", e);
        for (BatchRun.Pending p : batch.pending.values()) {
          p.events().end(OnceListener.CallOutcome.OUTCOME_UNKNOWN, e);
        }
        return Map.of();
      }
      // The handlers returned: their work must not run again because the store failed now. The
      // outcomes stay here with their claims held (extended by the heartbeat, if any) and are
      // stored before these messages are handled again (storeUnstored).
      LOG.log(System.Logger.Level.WARNING, "could not store the outcomes of "
          + completions.size() + " messages; they are kept with their claims and stored again"
          + " before their messages are handled again", e);
      for (BatchRun.Pending p : batch.pending.values()) {
        unstored.keep(p.attempt(), p.outcome(), p.started());
        notStored.put(p.key(), Status.OUTCOME_PENDING);
        p.events().end(OnceListener.CallOutcome.OUTCOME_UNKNOWN, e);
      }
      batch.storeFailure = e;
      return notStored;
    }
    for (BatchRun.Pending p : batch.pending.values()) {
      if (!notStored.containsKey(p.key())) {
        Duration elapsed = Duration.ofNanos(config.ticker().getAsLong() - p.started());
        p.events().tell(l -> l.onCompleted(p.key(), p.token(), elapsed));
      }
    }
    return notStored;
  }

  /**
   * Decides what became of the messages awaiting the batch's completion: final once stored; the
   * status of the completion (and a redelivery, for a duplicate following it) when not.
   */
  private void settle(Map<IdempotencyKey, Status> notStored, BatchRun<M> batch) {
    for (int i = 0; i < batch.dispositions.length; i++) {
      Disposition step = batch.dispositions[i];
      if (step.awaiting() == null) {
        continue;
      }
      Status failed = notStored.get(step.awaiting());
      BatchRun.Pending owner = batch.pending.get(step.awaiting());
      int attempt = owner == null ? 0 : owner.attempt().attemptNumber();
      if (failed != null) {
        Instant retryAt = now().plus(settings.config().initialBackoff());
        batch.dispositions[i] = step.status() == Status.HANDLED
            ? Disposition.notFinal(failed, retryAt, batch.storeFailure, attempt)
            : Disposition.notFinal(Status.NOT_RUN, retryAt, null, 0);
      } else {
        if (step.status() == Status.REPLAYED) {
          batch.calls[i].tell(l -> l.onReplayed(step.awaiting()));
        }
        batch.dispositions[i] = Disposition.done(step.status(), step.status() == Status.HANDLED ? attempt : 0);
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

  private Disposition handle(M message, Item item, Claim claim, AttemptImpl attempt,
      Map<IdempotencyKey, Boolean> ownedHere, BatchRun<M> batch, CallEvents events) {
    if (item.key == null) {
      return withoutKey(message, item.noKeyCause);
    }
    if (claim == null) {
      try {
        claim = store.forCall(events).claim(request(item, now()));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "claim of " + item.key + " failed; retrying later", e);
        return Disposition.notFinal(Status.NOT_RUN, now().plus(settings.config().initialBackoff()), e, 0);
      }
      if (claim instanceof Claim.Acquired acquired) {
        try {
          attempt = hold(item.key, acquired, batch, events);
        } catch (RuntimeException e) {
          giveBackUnreadable(item.key, acquired, e, events);
          return Disposition.notFinal(Status.NOT_RUN, now().plus(settings.config().initialBackoff()), e,
              0);
        }
      }
    }
    IdempotencyKey key = item.key;
    if (claim instanceof Claim.Replay) {
      unstored.take(key); // stored meanwhile: nothing left to keep
      events.tell(l -> l.onReplayed(key));
      return Disposition.done(Status.REPLAYED, 0);
    }
    if (claim instanceof Claim.Mismatch) {
      events.tell(l -> l.onMismatch(key));
      KeyReusedException e = new KeyReusedException(key);
      return deadLetter(new DeadLetter<>(message, DeadLetter.Reason.KEY_REUSED, key,
          e.getClass().getName(), e.getMessage(), 0), e);
    }
    if (claim instanceof Claim.InProgress inProgress) {
      Boolean ownFinal = ownedHere.get(key);
      if (ownFinal != null) {
        if (ownFinal && batch.pending.containsKey(key)) {
          return Disposition.awaiting(key, Status.REPLAYED);
        }
        if (ownFinal) {
          events.tell(l -> l.onReplayed(key));
          return Disposition.done(Status.REPLAYED, 0);
        }
        return Disposition.notFinal(Status.NOT_RUN, now().plus(settings.config().initialBackoff()), null, 0);
      }
      if (unstored.keeps(key)) {
        // Our own claim: the handler returned in an earlier batch and its outcome is kept until
        // the store takes it. Not run again; delivered again once it is stored (then a replay).
        return Disposition.notFinal(Status.OUTCOME_PENDING, now().plus(settings.config().initialBackoff()), null,
            0);
      }
      events.tell(l -> l.onInProgress(key));
      // Held by another worker (typically around a rebalance): look again after a backoff, or
      // when its lease ends, where a takeover becomes possible, whichever comes first.
      Instant at = now().plus(settings.config().inProgressBackoff());
      return Disposition.notFinal(Status.IN_PROGRESS,
          inProgress.leaseUntil().isBefore(at) ? inProgress.leaseUntil() : at, null, 0);
    }
    Claim.Acquired acquired = (Claim.Acquired) claim;
    UnstoredOutcomes.Unstored kept = unstored.take(key);
    Disposition step;
    if (kept != null) {
      // The handler ran here and returned, but its outcome was not stored and its claim lapsed
      // (no heartbeat, or a long outage) before this claim retook the key: store the kept
      // outcome under the new claim instead of running the handler again.
      LOG.log(System.Logger.Level.INFO, "{0} was handled already; storing its kept outcome"
          + " instead of running it again", key);
      step = returned(key, attempt, kept.outcome(), kept.started(), batch, events);
    } else {
      step = run(message, key, acquired, attempt, batch, events);
    }
    ownedHere.put(key, step.retryAt() == null);
    return step;
  }

  /**
   * Gives back, uncounted, a claim whose step journal this version cannot read (written by a
   * newer version during a rolling deploy, or damaged): its message fails alone, not run here.
   */
  private void giveBackUnreadable(IdempotencyKey key, Claim.Acquired acquired,
      RuntimeException why, CallEvents events) {
    LOG.log(System.Logger.Level.WARNING, "the record of {0} cannot be read here ({1}); not run,"
        + " given back for a worker that can", key, why.getMessage());
    store.forCall(events).releaseOrLeave(key, acquired.token(), "not run: "
        + Execution.describe(why), now(),
        config.retention());
  }

  /** Holds the claim of {@code key} from now until its outcome is stored or it is released. */
  private AttemptImpl hold(IdempotencyKey key, Claim.Acquired acquired, BatchRun<M> batch,
      CallEvents events) {
    AttemptImpl attempt = new AttemptImpl(key, acquired, config, store.forCall(events));
    leases.hold(attempt);
    batch.attempts.add(attempt);
    return attempt;
  }

  private Disposition run(M message, IdempotencyKey key, Claim.Acquired acquired, AttemptImpl attempt,
      BatchRun<M> batch, CallEvents events) {
    long token = acquired.token();
    events.acquired(acquired);
    try {
      // The claim was taken with the batch and the messages before this one may have been slow:
      // make sure it is still ours, and start the handler with at least a third of the lease
      // ahead (extended, under the token, when less is left).
      attempt.ensureLease();
    } catch (LeaseLostException e) {
      leases.drop(attempt);
      events.tell(l -> l.onLeaseLost(key, token));
      LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost while the message waited its"
          + " turn: another worker took over; not run here, it will be delivered again", key);
      return Disposition.notFinal(Status.LEASE_LOST, now().plus(settings.config().initialBackoff()), e, 0);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not extend the lease on " + key
          + " before running it; not run, it will be delivered again", e);
      leases.release(attempt, "released unprocessed: its lease could not be extended");
      return Disposition.notFinal(Status.NOT_RUN, now().plus(settings.config().initialBackoff()), e, 0);
    }
    long started = events.now();
    try {
      settings.handler().handle(message, attempt);
    } catch (Exception failure) {
      // Still held: the lease is renewed while compensations run and the dead letter is
      // published; failed() lets go only once what became of the message is stored.
      return failed(message, key, acquired, attempt, failure, events);
    } catch (Error fatal) {
      // The process is going down: record nothing, as a killed process could not either. The
      // lease runs out and the next worker takes over.
      leases.drop(attempt);
      events.end(OnceListener.CallOutcome.ERROR, fatal);
      throw fatal;
    }
    ReplayedFailureException committed = attempt.committedFailure();
    if (committed != null) {
      // An earlier attempt began compensating a terminal failure of the steps: it ends so.
      return failed(message, key, acquired, attempt, committed, events);
    }
    return returned(key, attempt, emptyOutcome, started, batch, events);
  }

  /** The handler returned: its outcome is stored with the batch, or at once, or kept. */
  private Disposition returned(IdempotencyKey key, AttemptImpl attempt, Outcome outcome, long started,
      BatchRun<M> batch, CallEvents events) {
    if (settings.config().batchClaims()) {
      // Stored with the rest of the batch (storePending); the claim stays held until then.
      batch.pending.put(key, new BatchRun.Pending(attempt, outcome, started, events));
      return Disposition.awaiting(key, Status.HANDLED);
    }
    long token = attempt.token();
    leases.drop(attempt);
    try {
      store.forCall(events).complete(key, token, outcome, now(), config.retention());
    } catch (LeaseLostException e) {
      events.tell(l -> l.onLeaseLost(key, token));
      LOG.log(System.Logger.Level.WARNING, "lease on {0} was lost before completion: another"
          + " worker took over; the message will be delivered again", key);
      return Disposition.notFinal(Status.LEASE_LOST, now().plus(settings.config().initialBackoff()), e,
          attempt.attemptNumber());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "could not store the outcome of " + key
          + "; kept with its claim, stored before the message is handled again", e);
      unstored.keep(attempt, outcome, started);
      return Disposition.notFinal(Status.OUTCOME_PENDING, now().plus(settings.config().initialBackoff()), e,
          attempt.attemptNumber());
    }
    Duration elapsed = Duration.ofNanos(events.now() - started);
    events.tell(l -> l.onCompleted(key, token, elapsed));
    return Disposition.done(Status.HANDLED, attempt.attemptNumber());
  }

  /**
   * The handler threw. Its claim is held (renewed by the heartbeat) until the end: through the
   * compensations and the dead letter's publication, dropped just before the failure is stored or
   * the claim released, so a slow broker cannot let another worker take the message over.
   */
  private Disposition failed(M message, IdempotencyKey key, Claim.Acquired acquired,
      AttemptImpl attempt, Exception failure, CallEvents events) {
    Disposition settled = null;
    try {
      settled = settleFailure(message, key, acquired, attempt, failure, events);
      return settled;
    } finally {
      // Settled: the call ends as the settling came to (a lost lease ended it already), after
      // every other event of it.
      if (settled != null && settled.status() == Status.OUTCOME_PENDING) {
        events.end(OnceListener.CallOutcome.OUTCOME_UNKNOWN, settled.failure());
      }
      events.endFailure();
    }
  }

  private Disposition settleFailure(M message, IdempotencyKey key, Claim.Acquired acquired,
      AttemptImpl attempt, Exception failure, CallEvents events) {
    long token = acquired.token();
    int number = acquired.attempt();
    if (failure instanceof LeaseLostException) {
      leases.drop(attempt);
      events.tell(l -> l.onLeaseLost(key, token));
      return Disposition.notFinal(Status.LEASE_LOST, now().plus(settings.config().initialBackoff()), failure,
          number);
    }
    boolean terminal = attempt.committedFailure() != null
        || Execution.isTerminal(config, failure);
    boolean exhausted = !terminal && number >= settings.config().maxAttempts();
    events.tell(l -> l.onFailed(key, token, failure, terminal || exhausted));
    if (!terminal && !exhausted) {
      leases.fail(attempt, Execution.describe(failure));
      Instant retryAt = now().plus(settings.config().backoff(number));
      LOG.log(System.Logger.Level.DEBUG, () -> key + " failed on attempt " + number + " of "
          + settings.config().maxAttempts() + ", delivered again from " + retryAt + ": "
          + Execution.describe(failure));
      return Disposition.notFinal(Status.RETRY, retryAt, failure, number);
    }
    AttemptImpl.Termination termination;
    try {
      // The steps the handler completed are undone (each once) before the failure is final.
      termination = attempt.terminate(failure);
    } catch (LeaseLostException lost) {
      // The lease passed while compensating: the successor undoes what is left.
      leases.drop(attempt);
      events.tell(l -> l.onLeaseLost(key, token));
      return Disposition.notFinal(Status.LEASE_LOST, now().plus(settings.config().initialBackoff()), lost,
          number);
    } catch (RuntimeException compensationFailure) {
      LOG.log(System.Logger.Level.WARNING, "compensating the failure of " + key + " failed;"
          + " released, the message will be delivered again", compensationFailure);
      leases.fail(attempt, "compensation failed: " + compensationFailure.getMessage());
      failure.addSuppressed(compensationFailure);
      return Disposition.notFinal(Status.RETRY, now().plus(settings.config().backoff(number)), failure, number);
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
      events.tell(l -> l.onLeaseLost(key, token));
      return Disposition.notFinal(Status.LEASE_LOST, now().plus(settings.config().initialBackoff()), e, number);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not extend the lease on " + key
          + " before publishing its dead letter", e);
    }
    // Dead letter first, then the stored failure: a crash in between re-runs the message after
    // the lease (the dead letter may then be published twice) but never loses it.
    if (!deadLetters.publish(letter, key)) {
      leases.fail(attempt, Execution.describe(failure));
      return Disposition.notFinal(Status.RETRY, now().plus(settings.config().backoff(number)), failure, number);
    }
    leases.drop(attempt); // no beat may extend it while it is being completed
    try {
      store.forCall(events).complete(key, token, outcome, now(), config.retention());
    } catch (LeaseLostException e) {
      events.tell(l -> l.onLeaseLost(key, token));
      return Disposition.notFinal(Status.LEASE_LOST, now().plus(settings.config().initialBackoff()), e, number);
    } catch (RuntimeException e) {
      // Dead-lettered already: keep the stored failure to come, as for an outcome (above).
      LOG.log(System.Logger.Level.WARNING, "could not store the failure of " + key
          + "; kept with its claim, stored before the message is handled again", e);
      unstored.keep(attempt, outcome, events.now());
      return Disposition.notFinal(Status.OUTCOME_PENDING, now().plus(settings.config().initialBackoff()), e,
          number);
    }
    LOG.log(System.Logger.Level.WARNING, "{0} dead-lettered ({1}) after attempt {2}: {3}", key,
        reason, number, termination.fullyCompensated() ? Execution.describe(failure)
            : outcome.failureMessage());
    return Disposition.deadLettered(reason, failure, number);
  }

  private Disposition withoutKey(M message, RuntimeException cause) {
    if (settings.config().noKeyPolicy() == NoKeyPolicy.DEAD_LETTER) {
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
      boolean terminal = Execution.isTerminal(config, failure);
      if (!terminal && attempts < settings.config().maxAttempts()) {
        return Disposition.notFinal(Status.RETRY, now().plus(settings.config().backoff(attempts)), failure,
            attempts);
      }
      Disposition step = deadLetter(new DeadLetter<>(message, terminal
          ? DeadLetter.Reason.TERMINAL_FAILURE : DeadLetter.Reason.RETRIES_EXHAUSTED, null,
          failure.getClass().getName(), failure.getMessage(), attempts), failure);
      if (step.retryAt() == null) {
        unprotectedAttempts.remove(id);
      }
      return step;
    }
    unprotectedAttempts.remove(id);
    return Disposition.done(Status.HANDLED, 0);
  }

  /** Publishes a dead letter for a message that is then final, or asks for a retry. */
  private Disposition deadLetter(DeadLetter<M> letter, Throwable cause) {
    if (!deadLetters.publish(letter, letter.key())) {
      return Disposition.notFinal(Status.RETRY, now().plus(settings.config().initialBackoff()), cause,
          letter.attempts());
    }
    LOG.log(System.Logger.Level.WARNING, "{0} dead-lettered ({1}) after attempt {2}: {3}",
        letter.key() == null ? "a message without a key" : letter.key(), letter.reason(),
        letter.attempts(), Execution.describe(cause));
    return Disposition.deadLettered(letter.reason(), cause, letter.attempts());
  }

  // ---------------------------------------------------------------------------------------------

  /** A message's key and fingerprint, or why it has none. */
  private record Item(IdempotencyKey key, Fingerprint fingerprint, Object group,
      RuntimeException noKeyCause) {
    static Item none(RuntimeException cause) {
      return new Item(null, null, null, cause);
    }
  }
}
