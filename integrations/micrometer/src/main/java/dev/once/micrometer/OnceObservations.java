package dev.once.micrometer;

/**
 * The names {@link ObservationOnceListener} gives its observations, their key values, events and
 * outcomes, in one place: trace queries, dashboards and custom conventions refer to these.
 *
 * <p>One observation {@value #EXECUTION} per call that a claim answered: for a call that ran the
 * work, from the acquired claim to the stored outcome; for a duplicate (replayed, in progress,
 * mismatch), an instant at the answer. Low-cardinality key values {@value #SCOPE},
 * {@value #STORE}, {@value #OUTCOME}; high-cardinality {@value #KEY} and {@value #TOKEN}.
 */
public final class OnceObservations {

  private OnceObservations() {}

  /** The observation's name: one call of Once for one key. */
  public static final String EXECUTION = "once.execution";

  /** Low cardinality: the key's scope (the operation), or {@code all} when the tag is off. */
  public static final String SCOPE = "once.scope";
  /** Low cardinality: the store's name ({@code jdbc}, {@code redis}, {@code inmemory}). */
  public static final String STORE = "once.store";
  /** Low cardinality: how the call ended, one of the outcome values below. */
  public static final String OUTCOME = "once.outcome";
  /** High cardinality: the client's key (without scope and tenant). */
  public static final String KEY = "once.key";
  /** High cardinality: the fencing token the work ran under (executions only). */
  public static final String TOKEN = "once.token";

  /** Outcome while the work runs (a claim of a new key, or of a failed one). */
  public static final String ACQUIRED = OnceMetrics.ACQUIRED;
  /** Outcome while the work runs after taking over a claim whose lease had passed. */
  public static final String TAKEOVER = OnceMetrics.TAKEOVER;
  /** Outcome: the work ran and its outcome was stored. */
  public static final String COMPLETED = OnceMetrics.COMPLETED;
  /**
   * Outcome: the work ran and succeeded, but its result could not be stored (too large, or the
   * codec threw): the key was completed with a marker, duplicates get
   * {@code OutcomeNotStoredException}.
   */
  public static final String NOT_STORED = OnceMetrics.NOT_STORED;
  /** Outcome: the work failed retryably; the claim is released. */
  public static final String FAILED = OnceMetrics.FAILED;
  /** Outcome: the work failed terminally; the failure is stored and replayed. */
  public static final String FAILED_TERMINAL = OnceMetrics.FAILED_TERMINAL;
  /** Outcome: another worker took over; this one's write was refused. */
  public static final String LEASE_LOST = OnceMetrics.LEASE_LOST;
  /** Outcome: the work ran, but storing its outcome failed even when repeated. */
  public static final String OUTCOME_UNKNOWN = OnceMetrics.OUTCOME_UNKNOWN;
  /** Outcome: a duplicate answered from the stored outcome. */
  public static final String REPLAYED = OnceMetrics.REPLAYED;
  /** Outcome: a duplicate turned away while the original runs. */
  public static final String IN_PROGRESS = OnceMetrics.IN_PROGRESS;
  /** Outcome: the key was reused with another fingerprint. */
  public static final String MISMATCH = OnceMetrics.MISMATCH;
  /**
   * Outcome of an execution whose end was never told to the listener (the store threw something
   * unexpected while completing it), stopped when too many were open on its thread.
   */
  public static final String ABANDONED = "abandoned";

  /**
   * Event: a takeover (the previous holder's lease had passed), at the start of the execution.
   */
  public static final String EVENT_TAKEOVER = "takeover";
  /** Event: the result could not be stored; the key is completed with a marker instead. */
  public static final String EVENT_NOT_STORED = "not_stored";
  /** Event: a heartbeat could not extend the lease (told from the heartbeat's thread). */
  public static final String EVENT_HEARTBEAT_FAILED = "heartbeat_failed";
  /** Event: a heartbeat found the lease lost (told from the heartbeat's thread). */
  public static final String EVENT_LEASE_LOST = "lease_lost";
  /*
   * Store calls are events too, named by their operation (claim, complete, fail, checkpoint,
   * extend, claimAll, completeAll); their contextual name tells the duration and whether the call
   * failed: "claim 1.204 ms", "complete failed after 5.000 ms".
   */
}
