package dev.once.micrometer;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.spi.IdempotencyStore;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * An {@link OnceListener} that makes Micrometer {@link Observation}s of what Once does, so that
 * every call shows in traces (OpenTelemetry, Brave) under the request or message that made it:
 * one observation {@value OnceObservations#EXECUTION} per call a claim answered, with its scope,
 * store and outcome as low-cardinality key values, its key as a high-cardinality one, and the
 * store calls as events. Names are in {@link OnceObservations}.
 *
 * <pre>{@code
 * Once once = Once.builder(store)
 *     .listener(OnceListener.compose(
 *         MicrometerOnceListener.of(meterRegistry, store),
 *         ObservationOnceListener.of(observationRegistry, store)))
 *     .build();
 * }</pre>
 *
 * <h2>How events become observations</h2>
 *
 * A listener is told what happened, never when a call begins or ends, so the observations follow
 * the events:
 *
 * <ul>
 *   <li>{@code onAcquired} starts an execution's observation (outcome {@code acquired} or
 *       {@code takeover}); {@code onCompleted}, {@code onFailed}, {@code onLeaseLost} and
 *       {@code onOutcomeUnknown} for the same key and token, on the same thread, stop it with that
 *       outcome ({@code not_stored} when {@code onOutcomeNotStored} came first), with the failure
 *       as its error. Its parent is the thread's current observation when the claim was answered
 *       (the HTTP request's, the consumed message's).
 *   <li>{@code onReplayed}, {@code onInProgress} and {@code onMismatch} make an observation that
 *       starts and stops at the answer.
 *   <li>{@code onStoreCall} (it carries no key) becomes an event: a claim's on the observation of
 *       the answer that follows it on the same thread (a waiting duplicate's repeated claims
 *       included); any other call's on the execution most recently acquired and still running on
 *       the same thread. Heartbeat failures and leases found lost by a heartbeat (told on the
 *       scheduler's thread) are events of the execution with that key and token.
 * </ul>
 *
 * <h2>Limits</h2>
 *
 * <ul>
 *   <li>The listener hears of a claim when it has returned: an observation starts after the claim
 *       (its duration is in the {@code claim} event's name), and a duplicate's observation is an
 *       instant.
 *   <li>The observation is not opened as the thread's current one: the work's own spans are its
 *       siblings under the same parent, not its children. Once does not tell when the work itself
 *       returns in every engine (a Kafka batch completes its records together, later), and a scope
 *       left open would leak into whatever the thread runs next.
 *   <li>A failed execution's observation ends at {@code onFailed}, which comes before the release
 *       or the stored failure is written: that write is in the metrics, not in the observation.
 *   <li>A claim that fails (the store is down) makes no observation: the call throws
 *       {@code StoreUnavailableException} and the listener hears nothing more. It is counted by
 *       {@code once.store.calls{result=error}}.
 *   <li>An execution whose end is never told (the store threw something unexpected while
 *       completing it, or an {@code Error} ended the thread's work) stays open until more than
 *       4096 are open on its thread; the oldest is then stopped as
 *       {@value OnceObservations#ABANDONED}.
 * </ul>
 *
 * <p>Thread-safe. One listener may serve several {@code Once} instances, and
 * {@code TransactionalOnce} and the Kafka consumer, which tell the same events.
 */
public final class ObservationOnceListener implements OnceListener {

  /** Executions one thread keeps open at most; a Kafka batch holds all of its records'. */
  static final int MAX_OPEN_PER_THREAD = 4096;
  /** Store-call events kept for the answer of a claim (a waiting duplicate claims repeatedly). */
  private static final int MAX_CLAIM_EVENTS = 32;
  /**
   * A failed claim that no answer followed within this time ended its call with an exception:
   * its event is not carried over to the thread's next call.
   */
  private static final long FAILED_CLAIM_STALE_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final ObservationRegistry registry;
  private final String store;
  private final OnceObservationConvention convention;
  private final OnceObservationConvention defaultConvention;
  private final ThreadLocal<Calls> calls = ThreadLocal.withInitial(Calls::new);
  /** Every open execution, for the events told from other threads (heartbeats). */
  private final Map<Execution, Running> running = new ConcurrentHashMap<>();

  private record Execution(IdempotencyKey key, long token) {}

  /** An execution's observation, open from its claim to its end. */
  private static final class Running {
    final Execution id;
    final Observation observation;
    final OnceObservationContext context;
    boolean notStored;

    Running(Execution id, Observation observation, OnceObservationContext context) {
      this.id = id;
      this.observation = observation;
      this.context = context;
    }
  }

  /** What the calls on one thread told so far; touched by that thread only. */
  private static final class Calls {
    /** Store calls of the claim whose answer is still to come. */
    final List<Observation.Event> claims = new ArrayList<>();
    long lastClaimNanos;
    boolean lastClaimFailed;
    /** Executions acquired on this thread and not ended, oldest first. */
    final LinkedHashMap<Execution, Running> executions = new LinkedHashMap<>();
    /** Set by onFailed: the release or stored failure written next belongs to that execution. */
    boolean afterFailure;

    Running latest() {
      Running last = null;
      for (Running r : executions.values()) {
        last = r;
      }
      return last;
    }
  }

  /** Where the listener's time comes from (nanoseconds): injected, so tests need no sleep. */
  private final LongSupplier ticker;

  private ObservationOnceListener(Builder b) {
    this.registry = b.registry;
    this.store = b.store;
    this.convention = b.convention;
    this.defaultConvention = new DefaultOnceObservationConvention(b.scopeTag);
    this.ticker = b.ticker;
  }

  /** A builder observing into {@code registry}. */
  public static Builder builder(ObservationRegistry registry) {
    return new Builder(registry);
  }

  /** A listener observing into {@code registry}, with {@code store}'s name. */
  public static ObservationOnceListener of(ObservationRegistry registry, IdempotencyStore store) {
    return builder(registry).store(store).build();
  }

  @Override
  public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
    if (registry.isNoop()) {
      return;
    }
    Calls t = calls.get();
    Observation.Event event = storeEvent(operation, elapsed, succeeded);
    if (operation.startsWith("claim")) {
      t.afterFailure = false;
      long now = ticker.getAsLong();
      if (t.lastClaimFailed && now - t.lastClaimNanos > FAILED_CLAIM_STALE_NANOS) {
        t.claims.clear();
      }
      if (t.claims.size() < MAX_CLAIM_EVENTS) {
        t.claims.add(event);
      }
      t.lastClaimNanos = now;
      t.lastClaimFailed = !succeeded;
      return;
    }
    if (t.afterFailure && (operation.equals("fail") || operation.equals("complete"))) {
      // The write after a failure whose observation has ended; repeated until it succeeds.
      t.afterFailure = !succeeded;
      return;
    }
    t.afterFailure = false;
    Running latest = t.latest();
    if (latest != null) {
      latest.observation.event(event);
    }
  }

  @Override
  public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
    if (registry.isNoop()) {
      return;
    }
    Calls t = calls.get();
    t.afterFailure = false;
    Execution id = new Execution(key, token);
    OnceObservationContext context = new OnceObservationContext(key, token, store,
        takeover ? OnceObservations.TAKEOVER : OnceObservations.ACQUIRED);
    Observation observation = start(context, t);
    if (takeover) {
      observation.event(Observation.Event.of(OnceObservations.EVENT_TAKEOVER,
          "took over a claim whose lease had passed"));
    }
    if (t.executions.size() >= MAX_OPEN_PER_THREAD) {
      Iterator<Running> oldest = t.executions.values().iterator();
      Running abandoned = oldest.next();
      oldest.remove();
      stop(abandoned, OnceObservations.ABANDONED, null);
    }
    Running r = new Running(id, observation, context);
    Running previous = t.executions.put(id, r);
    if (previous != null) {
      stop(previous, OnceObservations.ABANDONED, null);
    }
    running.put(id, r);
  }

  @Override
  public void onReplayed(IdempotencyKey key) {
    answer(key, OnceObservations.REPLAYED);
  }

  @Override
  public void onInProgress(IdempotencyKey key) {
    answer(key, OnceObservations.IN_PROGRESS);
  }

  @Override
  public void onMismatch(IdempotencyKey key) {
    answer(key, OnceObservations.MISMATCH);
  }

  @Override
  public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
    end(key, token, null, null);
  }

  @Override
  public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
    if (end(key, token, terminal ? OnceObservations.FAILED_TERMINAL : OnceObservations.FAILED,
        failure)) {
      calls.get().afterFailure = true;
    }
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    if (!end(key, token, OnceObservations.LEASE_LOST, null)) {
      // Told by a heartbeat: the work goes on, and ends on its own thread.
      event(key, token, Observation.Event.of(OnceObservations.EVENT_LEASE_LOST,
          "a heartbeat found the lease lost to another worker"));
    }
  }

  @Override
  public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
    end(key, token, OnceObservations.OUTCOME_UNKNOWN, storeFailure);
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    if (registry.isNoop()) {
      return;
    }
    Running r = calls.get().executions.get(new Execution(key, token));
    if (r != null) {
      r.notStored = true;
      r.observation.event(Observation.Event.of(OnceObservations.EVENT_NOT_STORED,
          "result not stored: " + cause));
    }
  }

  @Override
  public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
    event(key, token, Observation.Event.of(OnceObservations.EVENT_HEARTBEAT_FAILED,
        "heartbeat failed: " + error));
  }

  /** A duplicate's answer: an observation that starts and stops at once. */
  private void answer(IdempotencyKey key, String outcome) {
    if (registry.isNoop()) {
      return;
    }
    Calls t = calls.get();
    t.afterFailure = false;
    start(new OnceObservationContext(key, -1, store, outcome), t).stop();
  }

  private Observation start(OnceObservationContext context, Calls t) {
    Observation observation = Observation.createNotStarted(convention, defaultConvention,
        () -> context, registry).start();
    for (Observation.Event claim : t.claims) {
      observation.event(claim);
    }
    t.claims.clear();
    t.lastClaimFailed = false;
    return observation;
  }

  /**
   * Ends the execution if this thread runs it; {@code outcome} null for a completion.
   *
   * @return whether it did
   */
  private boolean end(IdempotencyKey key, long token, String outcome, Throwable error) {
    if (registry.isNoop()) {
      return false;
    }
    Running r = calls.get().executions.remove(new Execution(key, token));
    if (r == null) {
      return false;
    }
    if (outcome == null) {
      outcome = r.notStored ? OnceObservations.NOT_STORED : OnceObservations.COMPLETED;
    }
    stop(r, outcome, error);
    return true;
  }

  private void stop(Running r, String outcome, Throwable error) {
    running.remove(r.id, r);
    r.context.outcome(outcome);
    if (error != null) {
      r.observation.error(error);
    }
    r.observation.stop();
  }

  private void event(IdempotencyKey key, long token, Observation.Event event) {
    Running r = running.get(new Execution(key, token));
    if (r != null) {
      r.observation.event(event);
    }
  }

  private static Observation.Event storeEvent(String operation, Duration elapsed,
      boolean succeeded) {
    double millis = elapsed.toNanos() / 1e6;
    return Observation.Event.of(operation, succeeded
        ? String.format(Locale.ROOT, "%s %.3f ms", operation, millis)
        : String.format(Locale.ROOT, "%s failed after %.3f ms", operation, millis));
  }

  @Override
  public String toString() {
    return "ObservationOnceListener[store=" + store + "]";
  }

  /** Configures an {@link ObservationOnceListener}. */
  public static final class Builder {
    private final ObservationRegistry registry;
    private String store = OnceMetrics.DEFAULT_STORE;
    private OnceObservationConvention convention;
    private boolean scopeTag = true;
    private LongSupplier ticker = System::nanoTime;

    private Builder(ObservationRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry");
    }

    /** The {@value OnceObservations#STORE} value, e.g. {@code jdbc}. */
    public Builder storeName(String name) {
      this.store = MicrometerOnceListener.requireStoreName(name);
      return this;
    }

    /**
     * The {@value OnceObservations#STORE} value from the store's class, as
     * {@link MicrometerOnceListener.Builder#store} makes it ({@code JdbcStore} → {@code jdbc}).
     */
    public Builder store(IdempotencyStore store) {
      return storeName(MicrometerOnceListener.storeNameOf(store));
    }

    /**
     * A convention used instead of {@link DefaultOnceObservationConvention} (a global one set
     * on the registry's {@code observationConfig()} is used when none is given here).
     */
    public Builder convention(OnceObservationConvention convention) {
      this.convention = Objects.requireNonNull(convention, "convention");
      return this;
    }

    /**
     * Where the listener's time comes from, in nanoseconds as {@link System#nanoTime()} (the
     * default): a test moves it instead of sleeping.
     */
    public Builder ticker(LongSupplier ticker) {
      this.ticker = java.util.Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Whether the default convention puts the key's scope in {@value OnceObservations#SCOPE}
     * (default true); false puts {@code all}, for when scopes are many.
     */
    public Builder scopeTag(boolean enabled) {
      this.scopeTag = enabled;
      return this;
    }

    /** The listener. */
    public ObservationOnceListener build() {
      return new ObservationOnceListener(this);
    }
  }
}
