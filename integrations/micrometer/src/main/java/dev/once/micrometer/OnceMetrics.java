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
   * {@link #LEASE_LOST}. The values do not overlap: executions started = acquired + takeover.
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

  /** Tag: the outcome, on {@link #OUTCOMES}. */
  public static final String TAG_OUTCOME = "outcome";
  /** Tag: the key's scope (the operation or consumer), on {@link #OUTCOMES} and {@link #EXECUTIONS}. */
  public static final String TAG_SCOPE = "scope";
  /** Tag: the store's name, on every meter. */
  public static final String TAG_STORE = "store";
  /** Tag: the store operation, on {@link #STORE_CALLS}. */
  public static final String TAG_OPERATION = "operation";
  /** Tag: how an execution or a store call ended. */
  public static final String TAG_RESULT = "result";

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

  /** {@link #TAG_RESULT} of a store call that returned. */
  public static final String SUCCESS = "success";
  /** {@link #TAG_RESULT} of a store call that threw. */
  public static final String ERROR = "error";

  /** The {@link #TAG_STORE} value when the builder was given none. */
  public static final String DEFAULT_STORE = "default";
}
