package dev.once.micrometer;

import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.spi.IdempotencyStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An {@link OnceListener} that records Micrometer meters, named in {@link OnceMetrics}: a counter
 * of outcomes, a timer of executions, a timer of store calls, a counter of failed heartbeats and
 * one of coalescing's detours, tagged with the store, and those about a key with its scope.
 *
 * <pre>{@code
 * Once once = Once.builder(store)
 *     .listener(MicrometerOnceListener.builder(registry).store(store).build())
 *     .build();
 * }</pre>
 *
 * <p>Thread-safe; meters are registered on first use and cached. One listener may serve several
 * {@code Once} instances over the same store.
 */
public final class MicrometerOnceListener implements OnceListener {

  private final MeterRegistry registry;
  private final Tags commonTags;
  private final boolean scopeTag;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();
  /**
   * When each call in progress acquired its claim (nanoseconds since its start, on the
   * {@code Once}'s ticker), by {@link Call#id()}: kept from {@link #onCallAcquired} to
   * {@link #onCallEnded}, to time a failed execution from its acquisition.
   */
  private final Map<Long, Long> acquiredAt = new ConcurrentHashMap<>();
  private MicrometerOnceListener(Builder b) {
    this.registry = b.registry;
    this.commonTags = b.tags.and(OnceMetrics.TAG_STORE, b.store);
    this.scopeTag = b.scopeTag;
  }

  /** A builder recording into {@code registry}. */
  public static Builder builder(MeterRegistry registry) {
    return new Builder(registry);
  }

  /**
   * A listener recording into {@code registry}, tagged with {@code store}'s name (see
   * {@link Builder#store(IdempotencyStore)}).
   */
  public static MicrometerOnceListener of(MeterRegistry registry, IdempotencyStore store) {
    return builder(registry).store(store).build();
  }

  @Override
  public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
    count(takeover ? OnceMetrics.TAKEOVER : OnceMetrics.ACQUIRED, key);
  }

  @Override
  public void onReplayed(IdempotencyKey key) {
    count(OnceMetrics.REPLAYED, key);
  }

  @Override
  public void onInProgress(IdempotencyKey key) {
    count(OnceMetrics.IN_PROGRESS, key);
  }

  @Override
  public void onMismatch(IdempotencyKey key) {
    count(OnceMetrics.MISMATCH, key);
  }

  @Override
  public void onCompleted(IdempotencyKey key, long token, Duration elapsed) {
    count(OnceMetrics.COMPLETED, key);
    executionTimer(OnceMetrics.COMPLETED, key).record(elapsed);
  }

  @Override
  public void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {
    count(terminal ? OnceMetrics.FAILED_TERMINAL : OnceMetrics.FAILED, key);
  }

  @Override
  public void onLeaseLost(IdempotencyKey key, long token) {
    count(OnceMetrics.LEASE_LOST, key);
  }

  /** Notes when the call acquired its claim, to time its execution if it fails. */
  @Override
  public void onCallAcquired(Call call, boolean takeover, Duration elapsed) {
    acquiredAt.put(call.id(), elapsed.toNanos());
  }

  /**
   * Times a failed or lost execution (a completed one is timed by {@link #onCompleted}): from
   * the claim acquired to the call's end (its failure settled: compensated, stored or released),
   * measured on the {@code Once}'s ticker; the claim itself and, in a batch, the messages handled
   * before it are not included.
   */
  @Override
  public void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {
    Long acquired = acquiredAt.remove(call.id());
    if (acquired == null || !call.acquired()) {
      return;
    }
    String result = switch (outcome) {
      case FAILED -> OnceMetrics.FAILED;
      case FAILED_TERMINAL -> OnceMetrics.FAILED_TERMINAL;
      case LEASE_LOST -> OnceMetrics.LEASE_LOST;
      default -> null;
    };
    if (result != null) {
      executionTimer(result, call.key())
          .record(Duration.ofNanos(Math.max(0, elapsed.toNanos() - acquired)));
    }
  }

  @Override
  public void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {
    count(OnceMetrics.NOT_STORED, key);
  }

  @Override
  public void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {
    count(OnceMetrics.OUTCOME_UNKNOWN, key);
  }

  @Override
  public void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {
    String scope = scope(key);
    String exception = error == null ? "none" : error.getClass().getSimpleName();
    counters.computeIfAbsent("heartbeat\0" + exception + "\0" + scope, k -> Counter
        .builder(OnceMetrics.HEARTBEAT_FAILURES)
        .description("Heartbeats that could not extend the lease of running logic")
        .tags(commonTags)
        .tag(OnceMetrics.TAG_EXCEPTION, exception.isEmpty() ? "anonymous" : exception)
        .tag(OnceMetrics.TAG_SCOPE, scope)
        .register(registry)).increment();
  }

  @Override
  public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
    String result = succeeded ? OnceMetrics.SUCCESS : OnceMetrics.ERROR;
    timers.computeIfAbsent("store\0" + operation + "\0" + result, k -> Timer
        .builder(OnceMetrics.STORE_CALLS)
        .description("Calls to the idempotency store")
        .tags(commonTags)
        .tag(OnceMetrics.TAG_OPERATION, operation)
        .tag(OnceMetrics.TAG_RESULT, result)
        .register(registry)).record(elapsed);
  }

  @Override
  public void onCoalescingDetour(CoalescingDetour detour, String operation, int calls) {
    String name = detour == CoalescingDetour.ESCAPE ? OnceMetrics.ESCAPE : OnceMetrics.BATCH_FAILED;
    counters.computeIfAbsent("detour\0" + name + "\0" + operation, k -> Counter
        .builder(OnceMetrics.COALESCING_DETOURS)
        .description("Times coalesced store calls went around a call that answered late or failed")
        .tags(commonTags)
        .tag(OnceMetrics.TAG_DETOUR, name)
        .tag(OnceMetrics.TAG_OPERATION, operation)
        .register(registry)).increment();
  }

  private void count(String outcome, IdempotencyKey key) {
    String scope = scope(key);
    counters.computeIfAbsent(outcome + "\0" + scope, k -> Counter
        .builder(OnceMetrics.OUTCOMES)
        .description("Idempotent calls by outcome")
        .tags(commonTags)
        .tag(OnceMetrics.TAG_OUTCOME, outcome)
        .tag(OnceMetrics.TAG_SCOPE, scope)
        .register(registry)).increment();
  }

  private Timer executionTimer(String result, IdempotencyKey key) {
    String scope = scope(key);
    return timers.computeIfAbsent("exec\0" + result + "\0" + scope, k -> Timer
        .builder(OnceMetrics.EXECUTIONS)
        .description("Executions of the logic, from the claim to the stored outcome")
        .tags(commonTags)
        .tag(OnceMetrics.TAG_RESULT, result)
        .tag(OnceMetrics.TAG_SCOPE, scope)
        .register(registry));
  }

  private String scope(IdempotencyKey key) {
    return scopeTag ? key.scope() : "all";
  }

  /**
   * The store's name from its class: the simple name without a trailing {@code Store},
   * lower-case ({@code JdbcStore} → {@code jdbc}).
   */
  static String storeNameOf(IdempotencyStore store) {
    Objects.requireNonNull(store, "store");
    String name = store.getClass().getSimpleName();
    if (name.endsWith("Store") && name.length() > "Store".length()) {
      name = name.substring(0, name.length() - "Store".length());
    }
    return name.isEmpty() ? "store" : name.toLowerCase(Locale.ROOT);
  }

  /** {@code name}, if it can be a store tag's value: not null, not blank. */
  static String requireStoreName(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("store name must not be blank");
    }
    return name;
  }

  /** Configures a {@link MicrometerOnceListener}. */
  public static final class Builder {
    private final MeterRegistry registry;
    private String store = OnceMetrics.DEFAULT_STORE;
    private Tags tags = Tags.empty();
    private boolean scopeTag = true;

    private Builder(MeterRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry");
    }

    /** The {@link OnceMetrics#TAG_STORE} value, e.g. {@code jdbc}, {@code redis}. */
    public Builder storeName(String name) {
      this.store = MicrometerOnceListener.requireStoreName(name);
      return this;
    }

    /**
     * The {@link OnceMetrics#TAG_STORE} value derived from the store's class: its simple name
     * without a trailing {@code Store}, lower-case ({@code InMemoryStore} → {@code inmemory},
     * {@code JdbcStore} → {@code jdbc}).
     */
    public Builder store(IdempotencyStore store) {
      return storeName(storeNameOf(store));
    }

    /** Tags added to every meter, e.g. the application's name. */
    public Builder tags(Iterable<Tag> tags) {
      this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
      return this;
    }

    /** As {@link #tags(Iterable)}, from key-value pairs. */
    public Builder tags(String... keyValues) {
      this.tags = Tags.of(Objects.requireNonNull(keyValues, "keyValues"));
      return this;
    }

    /**
     * Whether meters are tagged with the key's scope (default true). Turn it off when scopes are
     * many (say, derived from URL paths) and the tag's cardinality would hurt; meters then carry
     * {@code scope=all}.
     */
    public Builder scopeTag(boolean enabled) {
      this.scopeTag = enabled;
      return this;
    }

    /** The listener. */
    public MicrometerOnceListener build() {
      return new MicrometerOnceListener(this);
    }
  }
}
