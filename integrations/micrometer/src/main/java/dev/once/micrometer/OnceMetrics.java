package dev.once.micrometer;

/**
 * The names of every meter {@link MicrometerOnceListener} records, and of their tags and tag
 * values, in one place: dashboards and alerts refer to these.
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th></tr>
 *   <tr><td>{@value #OUTCOMES}</td><td>counter</td><td>outcome, scope, store</td></tr>
 *   <tr><td>{@value #EXECUTIONS}</td><td>timer</td><td>result, scope, store</td></tr>
 *   <tr><td>{@value #STORE_CALLS}</td><td>timer</td><td>operation, result, store</td></tr>
 *   <tr><td>{@value #HEARTBEAT_FAILURES}</td><td>counter</td><td>exception, scope, store</td></tr>
 *   <tr><td>{@value #COALESCING_DETOURS}</td><td>counter</td><td>detour, operation, store</td></tr>
 * </table>
 *
 * <p>Every meter also carries the common tags given to the builder. Keys and tenants are never
 * tags: they are unbounded.
 */
public final class OnceMetrics {

  private OnceMetrics() {}

  /**
   * Counter: what happened to each call, tagged {@link #TAG_OUTCOME} with one of
   * {@link #ACQUIRED}, {@link #TAKEOVER}, {@link #REPLAYED}, {@link #IN_PROGRESS},
   * {@link #MISMATCH}, {@link #COMPLETED}, {@link #FAILED}, {@link #FAILED_TERMINAL},
   * {@link #LEASE_LOST}, {@link #NOT_STORED}, {@link #OUTCOME_UNKNOWN}. Executions started = acquired + takeover; a
   * {@link #NOT_STORED} execution is also counted {@link #COMPLETED} once its marker is stored.
   */
  public static final String OUTCOMES = "once.outcomes";

  /**
   * Timer: one execution of the logic, from the claim acquired to the outcome written, tagged
   * {@link #TAG_RESULT} {@link #COMPLETED}, {@link #FAILED}, {@link #FAILED_TERMINAL} or
   * {@link #LEASE_LOST}.
   */
  public static final String EXECUTIONS = "once.executions";

  /**
   * Timer: one store call, tagged {@link #TAG_OPERATION} ({@code claim}, {@code complete},
   * {@code fail}, {@code extend}, {@code checkpoint}) and {@link #TAG_RESULT} {@link #SUCCESS} or
   * {@link #ERROR}.
   */
  public static final String STORE_CALLS = "once.store.calls";

  /**
   * Counter: a heartbeat that could not extend the lease of running logic (the store was down, or
   * anything unexpected), tagged {@link #TAG_EXCEPTION} (the error's simple class name) and
   * {@link #TAG_SCOPE}. The logic goes on and the next beat tries again; each failed beat counts.
   * A heartbeat that finds the lease lost counts {@link #LEASE_LOST} on {@link #OUTCOMES} instead.
   */
  public static final String HEARTBEAT_FAILURES = "once.heartbeat.failures";

  /**
   * Counter: with coalesced store calls on ({@code Once.Builder.coalesceStoreCalls}, or the
   * store's default: on PostgreSQL), each time
   * they went around a store call, tagged {@link #TAG_DETOUR} {@link #ESCAPE} (queued callers
   * made one call more after 50 ms behind calls in flight that went unanswered) or
   * {@link #BATCH_FAILED} (a call made for several callers failed, each made its own), and
   * {@link #TAG_OPERATION} ({@code claim}, {@code complete}). A steady rate means a store that
   * answers late, or rows held by long transactions, while callers queue.
   */
  public static final String COALESCING_DETOURS = "once.coalescing.detours";

  /** Tag: the detour, on {@link #COALESCING_DETOURS}. */
  public static final String TAG_DETOUR = "detour";
  /** {@link #TAG_DETOUR}: queued callers escaped calls in flight that went unanswered. */
  public static final String ESCAPE = "escape";
  /** {@link #TAG_DETOUR}: a call made for several callers failed; each made its own. */
  public static final String BATCH_FAILED = "batch_failed";

  /** Tag: the outcome, on {@link #OUTCOMES}. */
  public static final String TAG_OUTCOME = "outcome";
  /** Tag: the key's scope (the operation or consumer), on {@link #OUTCOMES} and {@link #EXECUTIONS}. */
  public static final String TAG_SCOPE = "scope";
  /** Tag: the store's name, on every meter. */
  public static final String TAG_STORE = "store";
  /** Tag: the store operation, on {@link #STORE_CALLS} and {@link #COALESCING_DETOURS}. */
  public static final String TAG_OPERATION = "operation";
  /** Tag: how an execution or a store call ended. */
  public static final String TAG_RESULT = "result";
  /** Tag: the simple class name of the error, on {@link #HEARTBEAT_FAILURES}. */
  public static final String TAG_EXCEPTION = "exception";

  /** A claim of a new key, or of one whose last attempt failed retryably: the logic runs. */
  public static final String ACQUIRED = "acquired";
  /** A claim taken over from a holder whose lease passed without an outcome: the logic runs again. */
  public static final String TAKEOVER = "takeover";
  /** A duplicate answered from the stored outcome. */
  public static final String REPLAYED = "replayed";
  /** A duplicate that found the original still running and was turned away. */
  public static final String IN_PROGRESS = "in_progress";
  /** A key reused with another fingerprint. */
  public static final String MISMATCH = "mismatch";
  /** The logic succeeded and its outcome was stored. */
  public static final String COMPLETED = "completed";
  /** The logic failed retryably: the claim was released for another attempt. */
  public static final String FAILED = "failed";
  /** The logic failed terminally: the failure was stored and is replayed. */
  public static final String FAILED_TERMINAL = "failed_terminal";
  /** A write under the token was refused: another worker had taken over. */
  public static final String LEASE_LOST = "lease_lost";
  /**
   * The logic succeeded but its result could not be stored (larger than the payload bound, or
   * the codec threw): the key was completed with a marker instead, so the logic never runs again
   * and duplicates get {@code OutcomeNotStoredException}. Counted when it happens; the execution
   * then also counts {@link #COMPLETED} once the marker is stored.
   */
  public static final String NOT_STORED = "not_stored";
  /**
   * The work ran, but storing its outcome (a value, a terminal failure or a release) failed even
   * when repeated: whether it is stored is unknown ({@code OutcomeUnknownException}). Unless it
   * was stored, the key runs again once its lease passes. Alert on it.
   */
  public static final String OUTCOME_UNKNOWN = "outcome_unknown";

  /** {@link #TAG_RESULT} of a store call that returned. */
  public static final String SUCCESS = "success";
  /** {@link #TAG_RESULT} of a store call that threw. */
  public static final String ERROR = "error";

  /** The {@link #TAG_STORE} value when the builder was given none. */
  public static final String DEFAULT_STORE = "default";
}
