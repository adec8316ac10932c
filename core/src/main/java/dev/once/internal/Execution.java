package dev.once.internal;

import dev.once.AsyncWork;
import dev.once.Codec;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.OutcomeUnknownException;
import dev.once.ReplayedFailureException;
import dev.once.Result;
import dev.once.Scheduler;
import dev.once.StoreUnavailableException;
import dev.once.Work;
import dev.once.spi.Claim;
import dev.once.spi.ClaimRequest;
import dev.once.spi.Completion;
import dev.once.spi.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * The claim → run → complete/fail cycle behind {@link Once}. Public only as the door {@code Once}
 * builds its engine through (as {@code BatchEngine} is {@code BatchExecutor}'s); not API.
 */
public final class Execution {

  /** The listener of a {@code Once} built without one: lets the hot path skip timing. */
  public static final OnceListener NO_LISTENER = NoListener.INSTANCE;

  private static final System.Logger LOG = System.getLogger(Once.class.getName());

  private final Once.Config config;
  final StoreCalls store;
  /**
   * Claims and completions shared with concurrent callers: {@link #ALONE} when not coalescing,
   * null while coalescing is left to a store that does not know yet ({@link #coalescers()}).
   */
  private final java.util.concurrent.atomic.AtomicReference<Coalescers> coalescers;

  /**
   * Whether the store has an asynchronous claim, or completion, of its own. When it only inherits
   * the SPI's default (the blocking call on the executor), {@link #callAsync} calls the blocking
   * one on its executor thread directly: the same thread blocks, without a second task.
   */
  private final boolean ownClaimAsync;
  private final boolean ownCompleteAsync;

  /** The most requests one shared store call carries. */
  static final int MAX_COALESCED = 128;

  public Execution(Once.Config config) {
    this.config = config;
    this.store = new StoreCalls(config.store(), config.listener(), config.ticker());
    this.ownClaimAsync = overrides(config.store(), "claimAsync", ClaimRequest.class,
        java.util.concurrent.Executor.class);
    this.ownCompleteAsync = overrides(config.store(), "completeAsync", IdempotencyKey.class,
        long.class, Outcome.class, Instant.class, Duration.class,
        java.util.concurrent.Executor.class);
    int callsAlone = config.coalescedCallsInFlight();
    this.coalescers = new java.util.concurrent.atomic.AtomicReference<>(
        callsAlone < 0 ? storesCoalescing() : coalescers(callsAlone));
  }

  /**
   * The coalescers the store suggests ({@code defaultCoalescing()}, which answers without asking
   * its server); null while it does not know yet (-1: a JDBC store whose dialect was neither
   * given nor detected). A store that throws there, or answers another negative number, is
   * taken as suggesting none: it broke the SPI's contract, and asking it again on every call
   * would cost every call.
   */
  private Coalescers storesCoalescing() {
    int suggested;
    try {
      suggested = config.store().defaultCoalescing();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) { // a LinkageError too: the store's own reading of its pool
      LOG.log(System.Logger.Level.WARNING, "the store's defaultCoalescing() threw; its calls"
          + " are not coalesced (Once.Builder.coalesceStoreCalls sets it)", e);
      return ALONE;
    }
    if (suggested < -1) {
      LOG.log(System.Logger.Level.WARNING, "the store's defaultCoalescing() answered "
          + suggested + ", not -1, 0 or more; its calls are not coalesced"
          + " (Once.Builder.coalesceStoreCalls sets it)");
      return ALONE;
    }
    return suggested == -1 ? null : coalescers(suggested);
  }

  /** The coalescers that let {@code callsAlone} callers call alone; {@link #ALONE} for 0. */
  private Coalescers coalescers(int callsAlone) {
    if (callsAlone <= 0) {
      return ALONE;
    }
    Coalescer.Demand demand = new Coalescer.Demand();
    int batchCalls = Math.min(callsAlone, BATCH_CALLS_IN_FLIGHT);
    return new Coalescers(
        new Coalescer<>(MAX_COALESCED, callsAlone, batchCalls, demand, config.ticker(),
            COALESCED_ESCAPE_NANOS, store::claim,
            requests -> store.claimAll(requests, COALESCED_LOCK_WAIT), detours("claim")),
        new Coalescer<>(MAX_COALESCED, callsAlone, batchCalls, demand, config.ticker(),
            COALESCED_ESCAPE_NANOS, this::completeOne, this::completeMany,
            detours("complete")));
  }

  /**
   * The coalescers, {@link #ALONE} when not coalescing. Left to a store that did not know when
   * this Once was built (a JDBC store whose dialect was not given knows once a call has detected
   * it), it is asked again on each claim until it knows, and until then every call goes alone.
   * Racing calls may each ask; the first answer kept is the one used. Only a claim asks: what
   * runs after the work (storing its outcome) takes what is known ({@link #known()}), so that
   * nothing the store answers here can stand between the work and its outcome being stored.
   */
  private Coalescers coalescers() {
    Coalescers known = coalescers.get();
    if (known != null) {
      return known;
    }
    Coalescers decided = storesCoalescing();
    if (decided == null) {
      return ALONE;
    }
    Coalescers witness = coalescers.compareAndExchange(null, decided);
    return witness != null ? witness : decided;
  }

  /** The coalescers as known now, without asking the store: {@link #ALONE} while not known. */
  private Coalescers known() {
    Coalescers known = coalescers.get();
    return known != null ? known : ALONE;
  }

  /** Tells the listener of a coalescer's detours, as {@code operation}'s. */
  private Coalescer.Detours detours(String operation) {
    OnceListener listener = config.listener();
    return (detour, calls) -> notify(listener,
        l -> l.onCoalescingDetour(detour, operation, calls));
  }

  /** Whether {@code store}'s class overrides the SPI's default method {@code name}. */
  private static boolean overrides(dev.once.spi.IdempotencyStore store, String name,
      Class<?>... parameters) {
    try {
      return store.getClass().getMethod(name, parameters).getDeclaringClass()
          != dev.once.spi.IdempotencyStore.class;
    } catch (NoSuchMethodException | SecurityException e) {
      return true; // unknown: through the store's method, which is always right
    }
  }

  /**
   * A call's claim and its completion, each shared with concurrent callers' (completions answer
   * true when stored, false when the lease was lost). One demand for both: see {@link Coalescer}.
   */
  private record Coalescers(Coalescer<ClaimRequest, Claim> claims,
      Coalescer<Completion, Boolean> completions) {}

  /** Not coalescing: every call makes its own store calls. */
  private static final Coalescers ALONE = new Coalescers(null, null);

  /** How many batch calls of each kind may be in flight once callers queue: fewer, larger. */
  static final int BATCH_CALLS_IN_FLIGHT = 2;

  /**
   * How long the oldest queued caller waits for the calls in flight before it makes one more
   * (up to the calls alone): far above a batch call's round trip (a few milliseconds for 128
   * keys), so it only cuts short a call stuck on a row lock or a server that answers late.
   */
  static final long COALESCED_ESCAPE_NANOS =
      java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(50);

  /**
   * How long a coalesced batch claim or completion waits for a row another transaction holds
   * before it gives up and its callers make their calls alone (only the one whose row is held
   * waits then): as long as a queued caller waits for a late call, for the same reason.
   */
  static final Duration COALESCED_LOCK_WAIT = Duration.ofNanos(COALESCED_ESCAPE_NANOS);

  private Claim claimOnce(CallEvents events, ClaimRequest request) {
    Coalescers shared = coalescers();
    if (shared == ALONE) {
      return store.forCall(events).claim(request);
    }
    // An answer the store holds in memory (a near cache's replay) does not queue behind others.
    return shared(events, "claim", () -> {
      Claim fromMemory = store.claimFromMemory(request);
      return fromMemory != null ? fromMemory : shared.claims().call(request);
    });
  }

  /**
   * A store call shared with concurrent callers (coalesced): told as a store call of this call,
   * timed from when it asked to when it had its answer. The shared round trip itself is told
   * once, by whoever made it.
   */
  private static <R> R shared(CallEvents events, String operation,
      java.util.function.Supplier<R> call) {
    if (events.quiet()) {
      return call.get();
    }
    long start = events.now();
    boolean ok = false;
    try {
      R result = call.get();
      ok = true;
      return result;
    } finally {
      events.sharedStoreCall(operation, Duration.ofNanos(events.now() - start), ok);
    }
  }

  private Boolean completeOne(Completion c) {
    try {
      store.complete(c.key(), c.token(), c.outcome(), config.clock().instant(),
          config.retention());
      return true;
    } catch (LeaseLostException e) {
      return false;
    }
  }

  private java.util.List<Boolean> completeMany(java.util.List<Completion> batch) {
    java.util.Set<IdempotencyKey> lost = store.completeAll(batch, config.clock().instant(),
        config.retention(), COALESCED_LOCK_WAIT);
    java.util.List<Boolean> stored = new java.util.ArrayList<>(batch.size());
    for (Completion c : batch) {
      stored.add(!lost.contains(c.key()));
    }
    return stored;
  }

  public <T, X extends Exception> Result<T> call(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, Work<T, X> work) throws X {
    // Every event of this call goes through its CallEvents, which tells the call-scoped ones.
    CallEvents events = CallEvents.start(config.listener(), config.ticker(), key);
    try {
      Claim claim = claim(events, key, fingerprint);
      if (claim instanceof Claim.Acquired acquired) {
        return run(events, key, acquired, codec, work);
      }
      return ClaimAnswers.answer(key, claim, codec, config.clock(), events);
    } catch (Throwable t) {
      // Unless an event ended it already (the work's failure, a lost lease, an answer), the call
      // ends here: not run if it never held the claim (the store failed), else in error.
      events.end(events.holdsClaim() ? OnceListener.CallOutcome.ERROR
          : OnceListener.CallOutcome.NOT_RUN, t);
      throw t;
    }
  }

  /** Claims, and while the original is in progress polls as the policy allows. */
  private Claim claim(CallEvents events, IdempotencyKey key, Fingerprint fingerprint) {
    return waitWhileInProgress(events, key, fingerprint,
        claimOnce(events, request(key, fingerprint)));
  }

  /** After a first {@code claim}: while the original is in progress, polls as the policy allows. */
  private Claim waitWhileInProgress(CallEvents events, IdempotencyKey key,
      Fingerprint fingerprint, Claim claim) {
    if (!(claim instanceof Claim.InProgress) || !config.inProgress().waits()) {
      return claim;
    }
    Instant deadline = config.clock().instant().plus(config.inProgress().maxWait());
    Duration backoff = config.inProgress().initialBackoff();
    while (claim instanceof Claim.InProgress inProgress) {
      Instant now = config.clock().instant();
      if (!now.isBefore(deadline)) {
        return claim;
      }
      // Never sleep past the deadline, nor past the lease end, where a takeover becomes possible.
      Duration pause = min(backoff, Duration.between(now, deadline));
      Duration untilLeaseEnd = Duration.between(now, inProgress.leaseUntil());
      if (!untilLeaseEnd.isNegative() && !untilLeaseEnd.isZero()) {
        pause = min(pause, untilLeaseEnd);
      }
      try {
        config.sleeper().sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return claim;
      }
      backoff = min(backoff.multipliedBy(2), config.inProgress().maxBackoff());
      claim = claimOnce(events, request(key, fingerprint));
    }
    return claim;
  }

  private ClaimRequest request(IdempotencyKey key, Fingerprint fingerprint) {
    return new ClaimRequest(key, fingerprint, config.clock().instant(), config.storedLease(),
        config.retention());
  }

  private <T, X extends Exception> Result<T> run(CallEvents events, IdempotencyKey key,
      Claim.Acquired acquired, Codec<T> codec, Work<T, X> work) throws X {
    events.acquired(acquired);
    long started = events.now();
    AttemptImpl attempt = attempt(events, key, acquired);
    Scheduler.Task heartbeat = startHeartbeat(key, attempt);
    T value;
    try {
      value = work.run(attempt);
    } catch (Throwable failure) {
      // The heartbeat keeps the claim through compensation; it stops before the failure is stored.
      recordFailure(events, key, acquired.token(), failure, attempt, heartbeat);
      throw rethrow(failure);
    }
    return succeeded(events, key, acquired, started, attempt, heartbeat, codec, value);
  }

  /**
   * The attempt of a call that holds its claim, about to run its work; or, when the work must not
   * start (a journal this version cannot read, a lease passed since the claim), the claim given
   * back and the reason thrown.
   */
  private AttemptImpl attempt(CallEvents events, IdempotencyKey key, Claim.Acquired acquired) {
    StoreCalls store = this.store.forCall(events);
    AttemptImpl attempt;
    try {
      attempt = new AttemptImpl(key, acquired, config, store);
    } catch (RuntimeException unreadable) {
      // A step journal this version cannot read (written by a newer one): not run here.
      giveBack(store, key, acquired.token(), "not run: " + unreadable.getMessage());
      events.end(OnceListener.CallOutcome.NOT_RUN, unreadable);
      throw unreadable;
    }
    try {
      // A thread frozen between its claim and here finds its lease passed: the work does not
      // start. Given back uncounted, in case nobody took it over (fenced if somebody did).
      attempt.refuseIfLapsed();
    } catch (LeaseLostException e) {
      events.tell(l -> l.onLeaseLost(key, acquired.token()));
      LOG.log(System.Logger.Level.WARNING, "the lease on {0} passed before its work started;"
          + " not started", key);
      giveBack(store, key, acquired.token(), "not started: the lease passed before the work began");
      throw e;
    }
    return attempt;
  }

  private static Scheduler.Task startHeartbeat(IdempotencyKey key, AttemptImpl attempt) {
    try {
      return attempt.startHeartbeat();
    } catch (RuntimeException e) {
      // A scheduler already shut down (the application is closing): the work runs on its lease
      // alone rather than leaving a claim it cannot run.
      LOG.log(System.Logger.Level.WARNING, "the heartbeat of " + key + " could not be started;"
          + " running on the lease alone", e);
      return null;
    }
  }

  /** After the work returned {@code value}: its outcome stored, or why it could not be. */
  private <T> Result<T> succeeded(CallEvents events, IdempotencyKey key, Claim.Acquired acquired,
      long started, AttemptImpl attempt, Scheduler.Task heartbeat, Codec<T> codec, T value) {
    ReplayedFailureException committed = attempt.committedFailure();
    if (committed != null) {
      // An earlier attempt began compensating a terminal failure: the work ends in it.
      recordFailure(events, key, acquired.token(), committed, attempt, heartbeat);
      throw committed;
    }
    stop(heartbeat);

    Outcome outcome = encodeOrMarker(events, key, acquired.token(), codec, value);
    try {
      storeOutcome(events, key, acquired.token(), outcome);
    } catch (RuntimeException e) {
      throw notStored(events, key, acquired.token(), e);
    }
    return stored(events, key, acquired.token(), started, value);
  }

  /** The answer once the outcome of {@code value} is stored. */
  private <T> Result<T> stored(CallEvents events, IdempotencyKey key, long token, long started,
      T value) {
    Duration elapsed = Duration.ofNanos(events.now() - started);
    events.tell(l -> l.onCompleted(key, token, elapsed));
    return new Result<>(value, false, token);
  }

  /** What the caller gets when storing the outcome failed with {@code e}. */
  private RuntimeException notStored(CallEvents events, IdempotencyKey key, long token,
      RuntimeException e) {
    if (e instanceof LeaseLostException) {
      events.tell(l -> l.onLeaseLost(key, token));
      return e;
    }
    if (e instanceof StoreUnavailableException unavailable) {
      return outcomeUnknown(events, key, token, unavailable);
    }
    return e;
  }

  /**
   * {@link #succeeded} for the asynchronous path: the outcome written through the store's
   * {@code completeAsync} (native where the store has one, so no thread waits for it), the answer
   * completed on the executor. A write that fails retries as {@link #storeOutcome} does, blocking
   * the executor's thread through its pauses; the coalesced completion and a committed failure go
   * the blocking way.
   */
  private <T> void succeededAsync(CallEvents events, IdempotencyKey key, Claim.Acquired acquired,
      long started, AttemptImpl attempt, Scheduler.Task heartbeat, Codec<T> codec, T value,
      CompletableFuture<Result<T>> answer) {
    if (!ownCompleteAsync || known() != ALONE || attempt.committedFailure() != null) {
      // On the executor's thread already: the blocking way, as the SPI's default would run it.
      answer.complete(succeeded(events, key, acquired, started, attempt, heartbeat, codec, value));
      return;
    }
    stop(heartbeat);
    long token = acquired.token();
    Outcome outcome = encodeOrMarker(events, key, token, codec, value);
    StoreCalls calls = store.forCall(events);
    java.util.concurrent.Executor executor = config.asyncExecutor();
    long start = calls.start();
    CompletionStage<Void> writing;
    try {
      writing = calls.completeAsync(key, token, outcome, config.clock().instant(),
          config.retention(), orOwnThread(executor));
    } catch (RuntimeException e) {
      writing = CompletableFuture.failedFuture(e); // a store that threw instead: the same path
    }
    writing.whenCompleteAsync((stored, failure) -> {
      calls.told("complete", start, failure == null);
      try {
        if (failure != null) {
          Throwable cause = unwrap(failure);
          if (!(cause instanceof StoreUnavailableException unavailable)) {
            throw cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
          }
          retryStoreOutcome(events, key, token, outcome, unavailable);
        }
      } catch (RuntimeException e) {
        fail(events, answer, notStored(events, key, token, e));
        return;
      }
      try {
        answer.complete(stored(events, key, token, started, value));
      } catch (RuntimeException e) {
        fail(events, answer, e);
      }
    }, orOwnThread(executor));
  }

  /**
   * As {@link #call}, without blocking its caller: the claim, the wait for an original in
   * progress and, once the work's stage completes, storing its outcome or failure all run on
   * {@link Once.Config#asyncExecutor()}, through the same code as {@link #call}. The future
   * returned is the caller's alone: cancelling or completing it changes nothing here; the work's
   * outcome is stored when its stage completes (or the lease passes).
   */
  public <T> CompletableFuture<Result<T>> callAsync(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, AsyncWork<T> work) {
    CompletableFuture<Result<T>> answer = new CompletableFuture<>();
    CallEvents events = CallEvents.start(config.listener(), config.ticker(), key);
    java.util.concurrent.Executor executor = config.asyncExecutor();
    try {
      if (!ownClaimAsync || coalescers() != ALONE) {
        // Coalesced claims wait for their shared batch call, and a store without an asynchronous
        // claim of its own blocks for it: on the executor, one task.
        executor.execute(() -> startAsync(events, key, fingerprint, codec, work, answer,
            () -> claim(events, key, fingerprint)));
      } else {
        // The first claim through the store's own asynchronous claim (native where it has one);
        // the rest of the call on the executor, whichever thread answered.
        StoreCalls calls = store.forCall(events);
        long start = calls.start();
        // Told where the call goes on from the answer: on the executor, never on the caller's
        // thread (an event loop) nor on whichever thread completed the stage.
        calls.claimAsync(request(key, fingerprint), executor)
            .whenCompleteAsync((claim, failure) -> {
              calls.told("claim", start, failure == null);
              if (failure != null) {
                fail(events, answer, unwrap(failure));
              } else {
                startAsync(events, key, fingerprint, codec, work, answer,
                    () -> waitWhileInProgress(events, key, fingerprint, claim));
              }
            }, orOwnThread(executor));
      }
    } catch (RuntimeException refused) {
      // The store or the executor refused (shut down, saturated): nothing was claimed.
      fail(events, answer, refused);
    }
    return answer;
  }

  /**
   * Goes on from {@code claim}, evaluated on the executor's thread ({@link #claim} or
   * {@link #waitWhileInProgress}): a claim that throws fails the call, nothing run.
   */
  private <T> void startAsync(CallEvents events, IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, AsyncWork<T> work, CompletableFuture<Result<T>> answer,
      java.util.function.Supplier<Claim> claiming) {
    Claim.Acquired acquired;
    AttemptImpl attempt;
    Scheduler.Task heartbeat;
    long started;
    try {
      Claim claim = claiming.get();
      if (!(claim instanceof Claim.Acquired held)) {
        answer.complete(ClaimAnswers.answer(key, claim, codec, config.clock(), events));
        return;
      }
      acquired = held;
      events.acquired(acquired);
      started = events.now();
      attempt = attempt(events, key, acquired);
      heartbeat = startHeartbeat(key, attempt);
    } catch (Throwable t) {
      fail(events, answer, t);
      return;
    }
    CompletionStage<T> stage;
    try {
      stage = work.run(attempt);
      if (stage == null) {
        throw new NullPointerException("the work of " + key + " returned no CompletionStage");
      }
    } catch (Throwable failure) {
      failedAsync(events, key, acquired, attempt, heartbeat, failure, answer);
      return;
    }
    // Whatever thread completes the stage, the outcome is stored on the executor.
    stage.whenCompleteAsync((value, failure) -> {
      if (failure != null) {
        failedAsync(events, key, acquired, attempt, heartbeat, unwrap(failure), answer);
        return;
      }
      try {
        succeededAsync(events, key, acquired, started, attempt, heartbeat, codec, value, answer);
      } catch (Throwable t) {
        fail(events, answer, t);
      }
    }, orOwnThread(config.asyncExecutor()));
  }

  /**
   * {@code executor}, or a thread of its own for a task it refuses (an application shutting the
   * executor down): once a claim may be held, what follows must run (store the outcome, settle the
   * failure, give the claim back). Never on the thread that hands the task over, which may be a
   * store client's event loop that must not wait for the store; not a daemon thread, so that a
   * graceful stop waits for the outcome to be stored.
   */
  private static java.util.concurrent.Executor orOwnThread(
      java.util.concurrent.Executor executor) {
    return task -> {
      try {
        executor.execute(task);
      } catch (RuntimeException refused) {
        LOG.log(System.Logger.Level.WARNING, "the asyncExecutor refused a task ("
            + refused + "); running it on a thread of its own");
        Thread own = new Thread(task, "once-async-refused");
        try {
          own.start();
        } catch (RuntimeException | OutOfMemoryError noThread) {
          task.run(); // no thread to be had: here rather than never
        }
      }
    };
  }

  private <T> void failedAsync(CallEvents events, IdempotencyKey key, Claim.Acquired acquired,
      AttemptImpl attempt, Scheduler.Task heartbeat, Throwable failure,
      CompletableFuture<Result<T>> answer) {
    try {
      recordFailure(events, key, acquired.token(), failure, attempt, heartbeat);
    } finally {
      fail(events, answer, failure);
    }
  }

  /** As {@link #call}'s own catch: ends the call unless an event did, then fails the answer. */
  private static void fail(CallEvents events, CompletableFuture<?> answer, Throwable t) {
    events.end(events.holdsClaim() ? OnceListener.CallOutcome.ERROR
        : OnceListener.CallOutcome.NOT_RUN, t);
    answer.completeExceptionally(t);
  }

  /** The failure a stage completed with, as the work threw it. */
  private static Throwable unwrap(Throwable failure) {
    return failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
  }

  /**
   * Stores or releases after the work threw. The heartbeat runs until then: compensations are
   * work, and a claim must stay leased until what became of it is stored.
   */
  private void recordFailure(CallEvents events, IdempotencyKey key, long token,
      Throwable failure, AttemptImpl attempt, Scheduler.Task heartbeat) {
    try {
      settleFailure(events, key, token, failure, attempt, () -> stop(heartbeat));
    } finally {
      stop(heartbeat);
      // Settled: the call ends as the settling came to, unless a lost lease or an outcome
      // unknown ended it already; nothing of the call is told after this.
      events.endFailure();
    }
  }

  private void settleFailure(CallEvents events, IdempotencyKey key, long token,
      Throwable failure, AttemptImpl attempt, Runnable stopHeartbeat) {
    StoreCalls store = this.store.forCall(events);
    if (failure instanceof LeaseLostException) {
      events.tell(l -> l.onLeaseLost(key, token));
      return;
    }
    boolean terminal = attempt.committedFailure() != null || isTerminal(config, failure);
    events.tell(l -> l.onFailed(key, token, failure, terminal));
    Outcome terminalOutcome = null;
    if (terminal) {
      try {
        terminalOutcome = attempt.terminate(failure).outcome();
      } catch (LeaseLostException lost) {
        // The lease passed while compensating: the successor undoes what is left.
        stopHeartbeat.run();
        failure.addSuppressed(lost);
        events.tell(l -> l.onLeaseLost(key, token));
        return;
      } catch (RuntimeException compensationFailure) {
        stopHeartbeat.run();
        // Not stored yet: released, the next attempt compensates the rest (the journal says what
        // is left and how many tries failed; after Once.Builder.compensationAttempts it is final).
        failure.addSuppressed(compensationFailure);
        LOG.log(System.Logger.Level.WARNING, "compensating the terminal failure of " + key
            + " failed; released for a retry that compensates the rest", compensationFailure);
        release(store, key, token, failure, "compensation failed: " + compensationFailure.getMessage());
        return;
      }
    }
    stopHeartbeat.run();
    try {
      if (terminal) {
        storeOutcome(events, key, token, terminalOutcome);
      } else {
        store.fail(key, token, describe(failure), config.clock().instant(), config.retention());
      }
    } catch (RuntimeException storeFailure) {
      // The caller's exception stays the one thrown (attached: the store failure); the lease runs
      // out and a retry takes over. A terminal failure not stored would run again: say so loudly.
      failure.addSuppressed(storeFailure);
      if (storeFailure instanceof LeaseLostException) {
        events.tell(l -> l.onLeaseLost(key, token));
      } else if (storeFailure instanceof StoreUnavailableException unavailable) {
        LOG.log(terminal ? System.Logger.Level.WARNING : System.Logger.Level.INFO,
            "the " + (terminal ? "terminal" : "retryable") + " failure of " + key + " (token "
                + token + ") could not be stored: " + storeFailure.getMessage()
                + (terminal ? "; unless it was, a retry after the lease runs the work again" : ""));
        events.tell(l -> l.onOutcomeUnknown(key, token, unavailable));
      }
    }
  }

  /** Gives back a claim whose work never ran, the attempt not counted; best effort. */
  private void giveBack(StoreCalls store, IdempotencyKey key, long token, String why) {
    store.releaseOrLeave(key, token, why, config.clock().instant(), config.retention());
  }

  /**
   * Whether the failure policy calls {@code failure} terminal. The policy is user code: one that
   * throws is logged and the failure taken as retryable, so it fails only its own call.
   */
  static boolean isTerminal(Once.Config config, Throwable failure) {
    try {
      return config.failurePolicy().isTerminal(failure);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "the FailurePolicy threw classifying " + failure
          + "; taken as retryable", e);
      return false;
    }
  }

  private void release(StoreCalls store, IdempotencyKey key, long token, Throwable failure,
      String why) {
    try {
      store.fail(key, token, why.length() > 1000 ? why.substring(0, 1000) : why,
          config.clock().instant(), config.retention());
    } catch (RuntimeException storeFailure) {
      failure.addSuppressed(storeFailure);
    }
  }

  /** Pauses before each repeated completion; repeating is safe, stores recognise their writes. */
  private static final Duration[] COMPLETION_RETRY_PAUSES = {
      Duration.ofMillis(50), Duration.ofMillis(250)};

  /**
   * Completes, repeating the same write after a store failure (a reconnect usually cures it): a
   * completion that was applied although it failed is acknowledged the second time.
   */
  private void storeOutcome(CallEvents events, IdempotencyKey key, long token,
      Outcome outcome) {
    try {
      writeOutcome(events, key, token, outcome);
    } catch (StoreUnavailableException e) {
      retryStoreOutcome(events, key, token, outcome, e);
    }
  }

  /**
   * After a first write of the outcome failed with {@code failure}: again after each of
   * {@link #COMPLETION_RETRY_PAUSES}; the last failure is thrown.
   */
  private void retryStoreOutcome(CallEvents events, IdempotencyKey key, long token,
      Outcome outcome, StoreUnavailableException failure) {
    for (Duration pause : COMPLETION_RETRY_PAUSES) {
      if (!pause(pause)) {
        throw failure;
      }
      try {
        writeOutcome(events, key, token, outcome);
        return;
      } catch (StoreUnavailableException e) {
        failure = e;
      }
    }
    throw failure;
  }

  private void writeOutcome(CallEvents events, IdempotencyKey key, long token, Outcome outcome) {
    Coalescers shared = known();
    if (shared == ALONE) {
      store.forCall(events).complete(key, token, outcome, config.clock().instant(),
          config.retention());
    } else if (!shared(events, "complete",
        () -> shared.completions().call(new Completion(key, token, outcome)))) {
      throw new LeaseLostException(key, token);
    }
  }

  private boolean pause(Duration pause) {
    try {
      config.sleeper().sleep(pause);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private OutcomeUnknownException outcomeUnknown(CallEvents events, IdempotencyKey key,
      long token, StoreUnavailableException cause) {
    OutcomeUnknownException unknown = new OutcomeUnknownException(key, token, cause);
    LOG.log(System.Logger.Level.WARNING, unknown.getMessage());
    events.tell(l -> l.onOutcomeUnknown(key, token, cause));
    return unknown;
  }

  /**
   * The outcome to store for a value the work returned. The work has run: a value that cannot be
   * stored (too large, or its codec threw) must not make it run again, so the key is completed
   * with {@link Outcome#notStored} instead, and duplicates get {@link OutcomeNotStoredException}.
   */
  private <T> Outcome encodeOrMarker(CallEvents events, IdempotencyKey key, long token,
      Codec<T> codec, T value) {
    return Outcomes.encodeOrNotStored(codec, value, config.maxPayloadBytes(), key,
        e -> events.tell(l -> l.onOutcomeNotStored(key, token, e)));
  }

  private static void stop(Scheduler.Task heartbeat) {
    if (heartbeat != null) {
      heartbeat.cancel();
    }
  }

  static String describe(Throwable failure) {
    String message = failure.getMessage();
    String text = failure.getClass().getName() + (message == null ? "" : ": " + message);
    return text.length() > 1000 ? text.substring(0, 1000) : text;
  }

  /** Tells the listener, if any; a throwing listener is logged and ignored. */
  static void notify(OnceListener listener,
      java.util.function.Consumer<OnceListener> event) {
    if (listener == null || listener == NoListener.INSTANCE) {
      return;
    }
    try {
      event.accept(listener);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      // An Error too (a missing class in a metrics library): a listener must never decide
      // whether the work runs again.
      LOG.log(System.Logger.Level.WARNING, "OnceListener threw; ignored", e);
    }
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /**
   * Rethrows what the logic threw, unwrapped. Only the logic's declared {@code X}, unchecked
   * exceptions and errors can arrive here, so the caller's {@code throws X} stays truthful.
   */
  static RuntimeException rethrow(Throwable t) {
    throw Execution.<RuntimeException>sneak(t);
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneak(Throwable t) throws E {
    throw (E) t;
  }
}
