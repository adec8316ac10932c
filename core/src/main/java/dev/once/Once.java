package dev.once;

import dev.once.internal.Execution;
import dev.once.support.Checks;
import dev.once.spi.IdempotencyStore;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * Runs business logic once per idempotency key, in effect, however often the request or message is
 * delivered: claims the key atomically in the store, runs the logic, stores the outcome and
 * replays it to every duplicate. Fencing tokens make sure a worker whose lease passed can never
 * overwrite its successor. Thread-safe; build one per store and share it.
 *
 * <pre>{@code
 * Once once = Once.builder(store).lease(Duration.ofSeconds(30)).build();
 * Charge charge = once.execute(IdempotencyKey.of("payments.charge", request.id()),
 *     Fingerprint.of(request.body()), chargeCodec,
 *     attempt -> gateway.charge(request, attempt.key()));
 * }</pre>
 */
public final class Once {

  private final Execution execution;
  private final Config config;

  private Once(Config config) {
    this.config = config;
    this.execution = new Execution(config);
  }

  /** A builder over {@code store}, with the defaults listed on {@link Builder}. */
  public static Builder builder(IdempotencyStore store) {
    return new Builder(store);
  }

  /**
   * Runs {@code work} once for {@code key} and returns its value; a duplicate gets the stored value.
   *
   * @throws X                          the logic's own exception, unchanged
   * @throws KeyReusedException         the key was used with another fingerprint
   * @throws RequestInProgressException the original is still running (after waiting, if configured)
   * @throws ReplayedFailureException   the original failed terminally
   * @throws OutcomeNotStoredException  the original ran and succeeded, but its value could not be
   *                                    stored (too large for the payload bound, or the codec
   *                                    threw); it is not run again. The caller that ran the work
   *                                    gets the value: a value that cannot be stored never
   *                                    makes the work run twice
   * @throws LeaseLostException         another worker took over before this one finished
   * @throws StoreUnavailableException  the claim failed: the work did not run
   * @throws OutcomeUnknownException    the work ran, but storing its outcome failed (tried three
   *                                    times): whether it was stored is unknown. Do not
   *                                    compensate; retry the key (a replay if it was stored,
   *                                    else a re-run once the lease passes). A subclass of
   *                                    {@link StoreUnavailableException}
   */
  public <T, X extends Exception> T execute(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, Work<T, X> work) throws X {
    return call(key, fingerprint, codec, work).value();
  }

  /** As {@link #execute}, also telling whether the value was replayed, and the fencing token. */
  public <T, X extends Exception> Result<T> call(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, Work<T, X> work) throws X {
    requireArguments(key, fingerprint, codec, work);
    return execution.call(key, fingerprint, codec, work);
  }

  private static void requireArguments(IdempotencyKey key, Fingerprint fingerprint,
      Codec<?> codec, Object work) {
    Objects.requireNonNull(key, "key is null: pass IdempotencyKey.of(scope, the client's key)");
    Objects.requireNonNull(fingerprint, "fingerprint is null: pass Fingerprint.of(the request's"
        + " body), so a key reused for another request is refused, or Fingerprint.of(\"\") when"
        + " a key always names the same request");
    Objects.requireNonNull(codec, "codec is null: pass how the outcome is stored, e.g."
        + " Codecs.utf8() or JsonCodec.of(Type.class) from once-jackson");
    Objects.requireNonNull(work, "work is null: pass the logic to run once");
  }

  /**
   * As {@link #call}, without blocking the caller: the work returns a {@link CompletionStage}, and
   * the answer is a future. The same engine runs it with the same semantics — claim, fencing,
   * heartbeat, steps, waiting for an original in progress, replays, and every exception's meaning
   * (the future completes exceptionally with what {@link #call} would throw; {@code join()} wraps
   * it in a {@code CompletionException}).
   *
   * <p>Nothing blocks the caller or the thread that completes the work's stage: the claim (and any
   * wait for an original in progress), the call of {@code work} (which should return its stage at
   * once) and, once the stage completes, storing the outcome or the failure run on
   * {@link Builder#asyncExecutor}, whose threads do block on the store. The future
   * returned is the caller's alone: cancelling it neither releases the claim nor loses the
   * outcome, which is stored when the work's stage completes (or, if it never does, the claim is
   * kept by the heartbeat, as a blocked {@link #call} would keep it).
   */
  public <T> CompletableFuture<Result<T>> callAsync(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, AsyncWork<T> work) {
    requireArguments(key, fingerprint, codec, work);
    return execution.callAsync(key, fingerprint, codec, work);
  }

  /** As {@link #callAsync}, answering the value alone, as {@link #execute} does. */
  public <T> CompletableFuture<T> executeAsync(IdempotencyKey key, Fingerprint fingerprint,
      Codec<T> codec, AsyncWork<T> work) {
    return callAsync(key, fingerprint, codec, work).thenApply(Result::value);
  }

  /**
   * Runs {@code action} once for {@code key}, for its effect only.
   *
   * @return true if it ran now, false if a duplicate found it already done
   */
  public <X extends Exception> boolean run(IdempotencyKey key, Fingerprint fingerprint,
      Action<X> action) throws X {
    Objects.requireNonNull(action, "action");
    return !call(key, fingerprint, Codecs.none(), attempt -> {
      action.run(attempt);
      return null;
    }).replayed();
  }

  /**
   * A builder holding every setting of this instance, to build a variant of it (another failure
   * policy, listener or lease) without copying the settings one by one, so a setting added later
   * is carried over too.
   */
  public Builder toBuilder() {
    return new Builder(config);
  }

  /** The settings this instance was built with. */
  public Config config() {
    return config;
  }

  /** The store this instance works on. */
  public IdempotencyStore store() {
    return config.store();
  }

  /** The clock this instance reads. */
  public Clock clock() {
    return config.clock();
  }

  /** Maintenance (purge, reap) over the same store and clock. */
  public Maintenance maintenance() {
    return Maintenance.of(config.store()).withClock(config.clock());
  }

  /**
   * The settings of one {@link Once}, fixed at {@link Builder#build()}. Read-only: it has getters
   * and no public constructor, so a setting added later breaks no one (build settings with
   * {@link Builder}; derive a variant with {@link #toBuilder()}).
   */
  public static final class Config {
    // Each setting is a field here with its default, a getter below and a setter on the
    // Builder: nothing else. The builder edits a Config of its own; build() and toBuilder() copy
    // it whole, every field (copy()), so no copy is written by hand, field by field, to forget
    // one in.
    IdempotencyStore store;
    Duration lease = Builder.DEFAULT_LEASE;
    Duration retention = Builder.DEFAULT_RETENTION;
    InProgressPolicy inProgress = InProgressPolicy.reject();
    FailurePolicy failurePolicy = FailurePolicy.retryAll();
    int maxPayloadBytes = Builder.DEFAULT_MAX_PAYLOAD_BYTES;
    Clock clock = Clock.systemUTC();
    LongSupplier ticker = System::nanoTime;
    Sleeper sleeper = Sleeper.SYSTEM;
    OnceListener listener = Execution.NO_LISTENER;
    Scheduler heartbeat;
    Duration clockSkewMargin = Duration.ZERO;
    /** -1: the store's {@link IdempotencyStore#defaultCoalescing}. */
    int coalescedCallsInFlight = -1;
    java.util.Map<String, Step<?>> steps = new java.util.LinkedHashMap<>();
    int compensationAttempts = Builder.DEFAULT_COMPENSATION_ATTEMPTS;
    /** Null: {@link AsyncExecutors#DEFAULT}. */
    java.util.concurrent.Executor asyncExecutor;

    private Config(IdempotencyStore store) {
      this.store = store;
    }

    /** A copy of every setting (every instance field), the steps in a map of its own. */
    Config copy() {
      Config copy = new Config(store);
      for (java.lang.reflect.Field field : Config.class.getDeclaredFields()) {
        if (!java.lang.reflect.Modifier.isStatic(field.getModifiers())) {
          try {
            field.set(copy, field.get(this));
          } catch (IllegalAccessException e) {
            throw new AssertionError("Config's own fields are accessible to it", e);
          }
        }
      }
      copy.steps = new java.util.LinkedHashMap<>(steps);
      return copy;
    }

    /**
     * The step declared under {@code name} with {@link Builder#steps}, if any: how an attempt
     * compensates a step the journal says is done when the attempt itself never reached it.
     */
    public java.util.Optional<Step<?>> step(String name) {
      return java.util.Optional.ofNullable(steps.get(name));
    }

    /**
     * How many attempts at compensating a terminal failure may fail before the failure is stored
     * anyway, naming the steps left uncompensated ({@link Builder#compensationAttempts}).
     */
    public int compensationAttempts() {
      return compensationAttempts;
    }

    /** Where records live. */
    public IdempotencyStore store() {
      return store;
    }

    /** How long a claim is honoured without a heartbeat. */
    public Duration lease() {
      return lease;
    }

    /** How long finished records are kept and replayed. */
    public Duration retention() {
      return retention;
    }

    /** What duplicates do while the original runs. */
    public InProgressPolicy inProgress() {
      return inProgress;
    }

    /** Which failures are terminal. */
    public FailurePolicy failurePolicy() {
      return failurePolicy;
    }

    /** The largest outcome or checkpoint stored: the builder's bound, at most the store's. */
    public int maxPayloadBytes() {
      return maxPayloadBytes;
    }

    /** Where time comes from. */
    public Clock clock() {
      return clock;
    }

    /** Where durations told to the listener come from, in nanoseconds. */
    public LongSupplier ticker() {
      return ticker;
    }

    /** How a waiting duplicate pauses. */
    public Sleeper sleeper() {
      return sleeper;
    }

    /** Who observes (a no-op listener when none was set). */
    public OnceListener listener() {
      return listener;
    }

    /** Runs lease heartbeats, or null for none. */
    public Scheduler heartbeat() {
      return heartbeat;
    }

    /**
     * How much longer than {@link #lease()} the store honours a claim, so that a host whose clock
     * runs ahead by up to this much cannot take over early.
     */
    public Duration clockSkewMargin() {
      return clockSkewMargin;
    }

    /**
     * How many store calls of each kind concurrent callers make alone before they share batched
     * store calls, as given to {@link Builder#coalesceStoreCalls}: 0 when they never do, and -1
     * (the default) for what the store suggests, {@link IdempotencyStore#defaultCoalescing}.
     */
    public int coalescedCallsInFlight() {
      return coalescedCallsInFlight;
    }

    /**
     * Where {@link Once#callAsync} claims and stores, blocking on the store: the executor given to
     * {@link Builder#asyncExecutor}, else the default described there.
     */
    public java.util.concurrent.Executor asyncExecutor() {
      return asyncExecutor != null ? asyncExecutor : AsyncExecutors.DEFAULT;
    }

    /**
     * The lease written to the store: {@code lease + clockSkewMargin}. Other workers judge it by
     * their clocks; the holder works as if it ended {@code clockSkewMargin} earlier.
     */
    public Duration storedLease() {
      return lease.plus(clockSkewMargin);
    }

    @Override
    public String toString() {
      return "Once.Config[store=" + store + ", lease=" + lease + ", retention=" + retention
          + ", inProgress=" + inProgress + ", failurePolicy=" + failurePolicy
          + ", maxPayloadBytes=" + maxPayloadBytes + ", clock=" + clock + ", heartbeat="
          + (heartbeat != null) + ", clockSkewMargin=" + clockSkewMargin
          + ", coalescedCallsInFlight=" + coalescedCallsInFlight + ", steps=" + steps.keySet()
          + ", compensationAttempts=" + compensationAttempts + "]";
    }
  }

  /**
   * Builds a {@link Once}. Defaults: lease 30 s, retention 24 h, in-progress duplicates rejected,
   * every failure retryable, payloads up to 1 MiB, the system UTC clock, no listener, no heartbeat.
   * Each setter validates its argument at once.
   */
  public static final class Builder {
    /** Default lease. */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    /** Default retention: 24 hours, as Stripe. */
    public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
    /** Default number of failed attempts at compensating before a failure is stored anyway. */
    public static final int DEFAULT_COMPENSATION_ATTEMPTS = 5;
    /** The most failed tries at compensating a journal can count. */
    public static final int MAX_COMPENSATION_ATTEMPTS = 10_000;
    /** Default bound on a stored outcome or checkpoint: 1 MiB. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;

    private final Config config;

    private Builder(IdempotencyStore store) {
      this.config = new Config(Objects.requireNonNull(store, "store"));
    }

    /** A builder editing a copy of {@code config}, which stays as it is. */
    private Builder(Config config) {
      this.config = config.copy();
    }

    /** How long a claim is honoured before another worker may take over. Positive. */
    public Builder lease(Duration lease) {
      config.lease = Checks.positive(lease, "lease");
      return this;
    }

    /** How long a finished record is kept and replayed; after it the key behaves as new. Positive. */
    public Builder retention(Duration retention) {
      config.retention = Checks.positive(retention, "retention");
      return this;
    }

    /** What a duplicate does while the original runs. */
    public Builder onInProgress(InProgressPolicy policy) {
      config.inProgress = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** Which failures are terminal (stored and replayed) rather than retryable. */
    public Builder failurePolicy(FailurePolicy policy) {
      config.failurePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** The largest outcome or checkpoint stored, in bytes. Positive. */
    public Builder maxPayloadBytes(int bytes) {
      config.maxPayloadBytes = Checks.positive(bytes, "maxPayloadBytes");
      return this;
    }

    /** Where time comes from. Inject a manual clock in tests instead of sleeping. */
    public Builder clock(Clock clock) {
      config.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Where the durations told to the listener come from, in nanoseconds as
     * {@link System#nanoTime()} (the default): the elapsed times of store calls, executions and
     * calls ({@link OnceListener#onCallEnded}), and how long a caller has queued for a coalesced
     * store call ({@link #coalesceStoreCalls}; one that throws there only disables the escape).
     * Inject one a test moves (with the clock) instead of sleeping. Leases and retention follow
     * the {@link #clock}, not this.
     */
    public Builder ticker(LongSupplier ticker) {
      config.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** How a waiting duplicate pauses between polls. */
    public Builder sleeper(Sleeper sleeper) {
      config.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /** Who observes; for several, compose them in one listener. */
    public Builder listener(OnceListener listener) {
      config.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Extends the lease of running logic every third of the lease, on {@code scheduler}, so long
     * work keeps its claim while its process lives.
     */
    public Builder heartbeat(Scheduler scheduler) {
      config.heartbeat = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * How far apart the clocks of the hosts sharing a store may be. Leases are judged by the
     * clock of whoever reads them: a host whose clock runs ahead by d would see a live lease as
     * passed d early and take over while its holder still works. With a margin of at least d the
     * store honours every claim that much longer than the holder believes its lease lasts, so no
     * takeover comes before the holder's own lease end. Default zero: hosts are assumed to be
     * synchronised (NTP keeps them within milliseconds); set it to the worst skew you tolerate,
     * well below the lease. Zero or positive, less than the lease.
     */
    public Builder clockSkewMargin(Duration margin) {
      java.util.Objects.requireNonNull(margin, "margin");
      if (margin.isNegative()) {
        throw new IllegalArgumentException("clockSkewMargin must not be negative, was " + margin);
      }
      config.clockSkewMargin = margin;
      return this;
    }

    /**
     * Where {@link Once#callAsync} runs what blocks on the store: the claim (and any wait for an
     * original in progress), and storing the outcome or the failure once the work's stage
     * completes. Size it as you would the threads of a blocking service on the same store: each
     * call in flight holds one of its threads while it talks to the store (never while its work
     * runs). The default: a virtual thread per task on Java 21 and later; before, a cached pool
     * of daemon threads named {@code once-async-N}, idle ones ending after a minute.
     *
     * <p>It must run each task on a thread of its own, never on the thread that hands it over: a
     * store with an asynchronous client answers on that client's thread (an event loop), which
     * must not wait for the store. A direct executor ({@code Runnable::run}) would make it wait.
     */
    public Builder asyncExecutor(java.util.concurrent.Executor executor) {
      config.asyncExecutor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /**
     * Sets when concurrent calls share batched store calls. While no more than
     * {@code callsAlone} callers want the store at once (in a claim or a completion, waiting or
     * calling) and none is still queued from a busier moment, each makes its own store call at
     * once, as without coalescing: a lone caller, and as many callers as the pool has
     * connections, wait for nothing and pay nothing. When more do
     * (they would queue for a connection anyway), they queue here instead and share batch calls
     * through the store's {@code claimAll} and {@code completeAll} (one statement and one commit on
     * PostgreSQL), with at most two such calls of each kind in flight, so that under sustained
     * load a few large batches serve everyone; back to calls alone when the load falls. A batch
     * the store refuses is repeated call by call, so one bad key never fails its neighbours.
     *
     * <p>By default, what the store suggests ({@link IdempotencyStore#defaultCoalescing}): the
     * JDBC store on PostgreSQL suggests its pool's size (8 where the DataSource does not say;
     * from the call that has detected the database, if the dialect was not given), as does a
     * near cache over it; every other store shipped suggests 0
     * (off). The count is this {@code Once}'s: copies made with {@link Once#toBuilder} (as some
     * integrations make, e.g. for an {@code @Idempotent} method with its own failure policy)
     * each count their own callers, so together they may make more calls alone than one.
     *
     * <p>It pays on PostgreSQL with many concurrent callers (docs/benchmarks.md); on Redis it does
     * not (Lettuce already pipelines concurrent commands). What it costs: once callers queue, at
     * most two calls of each kind run at once; when those answer late (a row lock held by a long
     * transaction, a store that stalls), the callers queued behind them wait up to 50 ms (on the
     * {@link #ticker}) before the oldest makes one more call for all of them, up to
     * {@code callsAlone} calls; when {@code callsAlone} calls are in flight and none has ended
     * for 50 ms (every one may be stuck, e.g. duplicates waiting at the server for a row a long
     * transaction holds), one more beyond them, as the caller would have made its own without
     * coalescing. So a queued caller waits about 50 ms for calls that answer late, up to about
     * twice that while every call in flight is stuck and the pool has a connection free (when it
     * has none, the call beyond waits for one, and a caller may fail after twice the pool's
     * connection timeout: docs/architecture.md), and is not interrupted while it waits (as a
     * store call is not). A ticker that stands still (a test's) disables these escapes. A batch
     * waits as long for a row another transaction holds, on a store that can bound it (the JDBC
     * store on PostgreSQL), then its callers call alone, so that only the held key's caller
     * waits; elsewhere the callers inside a call that waits wait with it. When the demand falls
     * to {@code callsAlone}, queued callers are admitted at once (docs/architecture.md,
     * "Coalesced store calls").
     *
     * @param callsAlone 0 for off, else how many store calls of each kind callers make alone at
     *     once before they share batches (the connection pool's size, e.g. 8); this replaces the
     *     store's suggestion
     */
    public Builder coalesceStoreCalls(int callsAlone) {
      if (callsAlone < 0) {
        throw new IllegalArgumentException("callsAlone must be 0 (off) or positive, was "
            + callsAlone);
      }
      config.coalescedCallsInFlight = callsAlone;
      return this;
    }

    /**
     * Declares the steps whose compensations must run on any attempt, not only on one that reaches
     * them. An attempt compensates the steps it ran itself; a later attempt that fails before it
     * reaches a step (a transient error, an early return, a branch that skips it) knows how to undo
     * what the journal says an earlier attempt did only from this declaration. Declare every step
     * that has a {@linkplain Step#compensate compensation}: a terminal failure whose journal names
     * a compensable step that is neither declared nor reached is not stored as final until
     * {@link #compensationAttempts} attempts have tried, and is then stored naming that step as
     * not compensated. Step names are unique within one {@code Once}.
     *
     * @throws IllegalArgumentException if two different steps share a name
     */
    public Builder steps(Step<?>... steps) {
      java.util.Objects.requireNonNull(steps, "steps");
      for (Step<?> step : steps) {
        java.util.Objects.requireNonNull(step, "step");
        Step<?> earlier = config.steps.putIfAbsent(step.name(), step);
        if (earlier != null && earlier != step) {
          throw new IllegalArgumentException("two different steps are named '" + step.name()
              + "': a step name is unique within one Once");
        }
      }
      return this;
    }

    /**
     * How many attempts at compensating a terminal failure may fail (a compensation threw, or a
     * compensable step is neither declared nor reached) before the failure is stored anyway, as
     * final, naming the steps left uncompensated. Each failed attempt is journaled; the next
     * delivery or call retries the compensations not yet done. Default 5.
     */
    public Builder compensationAttempts(int attempts) {
      if (attempts < 1 || attempts > MAX_COMPENSATION_ATTEMPTS) {
        throw new IllegalArgumentException("compensationAttempts must be 1–"
            + MAX_COMPENSATION_ATTEMPTS + ", was " + attempts);
      }
      config.compensationAttempts = attempts;
      return this;
    }

    /** A {@link Once} with these settings. */
    public Once build() {
      if (config.clockSkewMargin.compareTo(config.lease) >= 0) {
        throw new IllegalArgumentException("clockSkewMargin (" + config.clockSkewMargin
            + ") must be less than the lease (" + config.lease + ")");
      }
      Config built = config.copy();
      built.maxPayloadBytes = Math.min(config.maxPayloadBytes, config.store.maxPayloadBytes());
      built.steps = java.util.Map.copyOf(config.steps);
      return new Once(built);
    }
  }
}
