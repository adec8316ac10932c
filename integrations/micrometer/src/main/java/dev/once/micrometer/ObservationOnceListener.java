package dev.once.micrometer;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.spi.IdempotencyStore;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

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
 * The engine tells each call as a pair ({@link OnceListener#onCallStarted} …
 * {@link OnceListener#onCallEnded}), every event carrying the {@link OnceListener.Call}; this
 * listener follows them by the call's id, on whatever thread they come:
 *
 * <ul>
 *   <li>{@code onCallAcquired} starts the call's observation (outcome {@code acquired} or
 *       {@code takeover}), under the observation that was current when the call started (the
 *       HTTP request's, the consumed message's); {@code onCallEnded} stops it with the call's
 *       outcome, its failure as the error.
 *   <li>A duplicate's call ({@code replayed}, {@code in_progress}, {@code mismatch}) is an
 *       observation that starts and stops at its answer.
 *   <li>The store calls of a call ({@code onStoreCall(Call, …)}) are its events: those before
 *       the answer (the claims, a waiting duplicate's repeated ones) are added when the
 *       observation starts. A batch's {@code claimAll} and {@code completeAll} are events of each
 *       of the batch's calls.
 *   <li>Events told with a key and token ({@code onOutcomeNotStored}, and a heartbeat's
 *       {@code onHeartbeatFailed} and {@code onLeaseLost}, told on the scheduler's thread) are
 *       events of the running call holding that claim.
 * </ul>
 *
 * <h2>Limits</h2>
 *
 * <ul>
 *   <li>An observation starts when the claim is answered: the claim's duration is in its
 *       {@code claim} event, and a duplicate's observation is an instant.
 *   <li>The observation is not opened as the thread's current one: the work's own spans are its
 *       siblings under the same parent, not its children. Once does not tell when the work itself
 *       returns in every engine (a Kafka batch completes its records together, later), and a scope
 *       left open would leak into whatever the thread runs next.
 *   <li>A failed call ends at {@code onCallEnded}, once its release or stored failure is
 *       written; that write is in the metrics, not an event of the observation.
 *   <li>A call that never held the claim (the store was down: {@code NOT_RUN}) makes no
 *       observation; it is counted by {@code once.store.calls{result=error}}. A call that held it
 *       and ended without an outcome (given back unrun, or an unexpected exception) is stopped as
 *       {@value OnceObservations#ABANDONED}.
 *   <li>Only engines that tell call-scoped events (Once, the batch engine under every consumer,
 *       {@code TransactionalOnce}) are observed.
 * </ul>
 *
 * <p>Thread-safe. One listener may serve several {@code Once} instances, and
 * {@code TransactionalOnce} and the consumers, which tell the same events.
 */
public final class ObservationOnceListener implements OnceListener {

  /** Store-call events kept for the answer of a claim (a waiting duplicate claims repeatedly). */
  private static final int MAX_CLAIM_EVENTS = 32;

  private final ObservationRegistry registry;
  private final String store;
  private final OnceObservationConvention convention;
  private final OnceObservationConvention defaultConvention;
  /** Every call started and not ended, by its id. */
  private final Map<Long, Tracked> calls = new ConcurrentHashMap<>();
  /** The calls holding a claim, by key and token, for the events told with those. */
  private final Map<Claimed, Tracked> running = new ConcurrentHashMap<>();

  private record Claimed(IdempotencyKey key, long token) {}

  /** One call: its parent, its events until its observation starts, then its observation. */
  private static final class Tracked {
    final Observation parent;
    final List<Observation.Event> early = new ArrayList<>();
    Observation observation;
    OnceObservationContext context;
    Claimed claimed;
    boolean leaseLostTold;
    /** Its observation has stopped: a heartbeat's event arriving late is dropped. */
    boolean stopped;

    Tracked(Observation parent) {
      this.parent = parent;
    }

    synchronized void event(Observation.Event event) {
      if (stopped) {
        return;
      }
      if (observation != null) {
        observation.event(event);
      } else if (early.size() < MAX_CLAIM_EVENTS) {
        early.add(event);
      }
    }
  }

  private ObservationOnceListener(Builder b) {
    this.registry = b.registry;
    this.store = b.store;
    this.convention = b.convention;
    this.defaultConvention = new DefaultOnceObservationConvention(b.scopeTag);
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
  public void onCallStarted(Call call) {
    if (!registry.isNoop()) {
      calls.put(call.id(), new Tracked(registry.getCurrentObservation()));
    }
  }

  @Override
  public void onStoreCall(Call call, String operation, Duration elapsed, boolean succeeded) {
    Tracked t = calls.get(call.id());
    if (t != null) {
      t.event(storeEvent(operation, elapsed, succeeded));
    }
  }

  @Override
  public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
    Tracked t = calls.get(call.id());
    if (t == null) {
      return;
    }
    synchronized (t) {
      t.context = new OnceObservationContext(call.key(), call.token(), store,
          takeover ? OnceObservations.TAKEOVER : OnceObservations.ACQUIRED);
      t.observation = start(t.context, t);
      if (takeover) {
        t.observation.event(Observation.Event.of(OnceObservations.EVENT_TAKEOVER,
            "took over a claim whose lease had passed"));
      }
      t.claimed = new Claimed(call.key(), call.token());
    }
    running.put(t.claimed, t);
  }

  @Override
  public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
    Tracked t = calls.remove(call.id());
    if (t == null) {
      return;
    }
    synchronized (t) {
      String answer = switch (outcome) {
        case REPLAYED -> OnceObservations.REPLAYED;
        case IN_PROGRESS -> OnceObservations.IN_PROGRESS;
        case MISMATCH -> OnceObservations.MISMATCH;
        default -> null;
      };
      if (answer != null) {
        start(new OnceObservationContext(call.key(), -1, store, answer), t).stop();
        return;
      }
      if (t.observation == null) {
        return; // never held the claim: no observation
      }
      running.remove(t.claimed, t);
      t.context.outcome(switch (outcome) {
        case COMPLETED -> OnceObservations.COMPLETED;
        case NOT_STORED -> OnceObservations.NOT_STORED;
        case FAILED -> OnceObservations.FAILED;
        case FAILED_TERMINAL -> OnceObservations.FAILED_TERMINAL;
        case LEASE_LOST -> OnceObservations.LEASE_LOST;
        case OUTCOME_UNKNOWN -> OnceObservations.OUTCOME_UNKNOWN;
        default -> OnceObservations.ABANDONED;
      });
      if (failure != null && outcome != CallOutcome.LEASE_LOST) {
        t.observation.error(failure);
      }
      t.stopped = true;
      t.observation.stop();
    }
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    event(key, token, Observation.Event.of(OnceObservations.EVENT_NOT_STORED,
        "result not stored: " + cause));
  }

  @Override
  public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
    event(key, token, Observation.Event.of(OnceObservations.EVENT_HEARTBEAT_FAILED,
        "heartbeat failed: " + error));
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    Tracked t = running.get(new Claimed(key, token));
    if (t == null) {
      return;
    }
    synchronized (t) {
      if (t.leaseLostTold) {
        return;
      }
      t.leaseLostTold = true;
    }
    // Told by a heartbeat while the work goes on, or by the engine just before the call ends.
    t.event(Observation.Event.of(OnceObservations.EVENT_LEASE_LOST,
        "the lease was lost to another worker"));
  }

  private Observation start(OnceObservationContext context, Tracked t) {
    Observation observation = Observation.createNotStarted(convention, defaultConvention,
        () -> context, registry);
    if (t.parent != null) {
      observation.parentObservation(t.parent);
    }
    observation.start();
    for (Observation.Event early : t.early) {
      observation.event(early);
    }
    t.early.clear();
    return observation;
  }

  private void event(IdempotencyKey key, long token, Observation.Event event) {
    Tracked t = running.get(new Claimed(key, token));
    if (t != null) {
      t.event(event);
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
