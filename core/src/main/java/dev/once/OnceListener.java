package dev.once;

import java.time.Duration;

/**
 * Observes what Once does, for metrics, logs and traces. Every method has a no-op default; an
 * exception thrown by a listener is logged and otherwise ignored.
 *
 * <h2>Call-scoped events</h2>
 *
 * Each call (a {@code Once.call}, one message of a consumer's batch, a {@code TransactionalOnce}
 * call) is told as a pair with what happened in between, each event carrying the {@link Call}
 * (its id, key, and once acquired its fencing token and attempt): {@link #onCallStarted} before
 * its first claim, {@link #onStoreCall(Call, String, Duration, boolean)} for each store call made
 * for it, {@link #onCallAcquired} when it holds the claim, and {@link #onCallEnded} once, last,
 * with its {@link CallOutcome} and how long it took. A listener matches events by
 * {@link Call#id()}, never by the thread that tells them; events told from elsewhere (a
 * heartbeat's) carry the key and token of the claim they concern. Durations come from the
 * {@link Once}'s ticker ({@code Once.Builder.ticker}), so a test moves time instead of sleeping.
 *
 * <p>The other events ({@link #onAcquired}, {@link #onCompleted}, …) are told as before, for the
 * listeners written against them; a new listener needs only the call-scoped ones and the events a
 * heartbeat tells.
 */
public interface OnceListener {

  /**
   * The call an event is about: {@code id} unique within the process, the key, and once the claim
   * is held its fencing {@code token} and {@code attempt} (1 for the first run); before that
   * {@code token} is -1 and {@code attempt} 0. Events about one call carry equal ids.
   */
  record Call(long id, IdempotencyKey key, long token, int attempt) {

    private static final java.util.concurrent.atomic.AtomicLong IDS =
        new java.util.concurrent.atomic.AtomicLong();

    /** Checks that the key is given. */
    public Call {
      java.util.Objects.requireNonNull(key, "key");
    }

    /**
     * A new call of {@code key}, not holding a claim yet, with an id no other call of this
     * process has: for an engine about to tell {@link #onCallStarted}.
     */
    public static Call of(IdempotencyKey key) {
      return new Call(IDS.incrementAndGet(), key, -1, 0);
    }

    /** This call (the same id) holding the claim under {@code token}, its {@code attempt}. */
    public Call holding(long token, int attempt) {
      return new Call(id, key, token, attempt);
    }

    /** Whether the call holds (or held) the claim: its token and attempt are known. */
    public boolean acquired() {
      return attempt > 0;
    }
  }

  /** How a call ended ({@link #onCallEnded}). */
  enum CallOutcome {
    /** The work ran and its outcome is stored. */
    COMPLETED,
    /**
     * The work ran, but its value could not be stored ({@link #onOutcomeNotStored}); a marker is
     * stored instead.
     */
    NOT_STORED,
    /** The work failed retryably; the claim is released for a retry. */
    FAILED,
    /** The work failed terminally (or ran out of attempts); the failure is stored. */
    FAILED_TERMINAL,
    /** Another worker took the claim over; nothing this call wrote after that counts. */
    LEASE_LOST,
    /** The work ran, but whether its outcome was stored is unknown (the store failed). */
    OUTCOME_UNKNOWN,
    /** A duplicate: answered from the stored outcome. */
    REPLAYED,
    /** A duplicate: the original is still in progress. */
    IN_PROGRESS,
    /** The key was used before with another fingerprint. */
    MISMATCH,
    /** The work did not run: the claim failed, or was given back unrun (a consumer stopping). */
    NOT_RUN,
    /** Ended by an exception none of the other outcomes covers; it is the call's failure. */
    ERROR
  }

  /**
   * How coalesced store calls ({@code Once.Builder.coalesceStoreCalls}) went around a store call
   * ({@link #onCoalescingDetour}).
   */
  enum CoalescingDetour {
    /**
     * Callers queued for a store call had waited 50 ms while every call in flight went
     * unanswered (a claim waiting for a row another transaction holds, a store answering late):
     * the oldest made one call more, for all of them.
     */
    ESCAPE,
    /**
     * A call made for several callers threw an exception (a batch claim that gave up on a row
     * another transaction held, or any store failure) or returned the wrong number of answers:
     * each caller made its own call instead. An {@link Error} is not a detour: it reaches every
     * caller of the batch.
     */
    BATCH_FAILED
  }

  /**
   * One listener telling each of {@code listeners} in order; one that throws does not stop the
   * others from being told. For a metrics listener next to a logging one, since
   * {@code Once.Builder.listener} takes one.
   */
  static OnceListener compose(OnceListener... listeners) {
    java.util.List<OnceListener> all = java.util.List.of(listeners); // rejects null
    if (all.size() == 1) {
      return all.get(0);
    }
    return new CompositeListener(all);
  }

  /** The claim was acquired; {@code takeover} when a previous holder's lease had passed. */
  default void onAcquired(IdempotencyKey key, long token, boolean takeover) {}

  /** A duplicate was answered from the stored outcome. */
  default void onReplayed(IdempotencyKey key) {}

  /** A duplicate found the original in progress and was rejected. */
  default void onInProgress(IdempotencyKey key) {}

  /** The key was reused with another fingerprint. */
  default void onMismatch(IdempotencyKey key) {}

  /** The logic succeeded and its outcome was stored; {@code elapsed} covers the logic and the write. */
  default void onCompleted(IdempotencyKey key, long token, Duration elapsed) {}

  /** The logic failed; {@code terminal} when the failure was stored for replay. */
  default void onFailed(IdempotencyKey key, long token, Throwable failure, boolean terminal) {}

  /** A write under {@code token} was refused because another worker took over. */
  default void onLeaseLost(IdempotencyKey key, long token) {}

  /**
   * The work ran and succeeded but its result could not be stored ({@code cause}: too large, or
   * the codec failed); the key was completed with a marker instead, so it never runs again and
   * duplicates get {@link OutcomeNotStoredException}.
   */
  default void onOutcomeNotStored(IdempotencyKey key, long token, Throwable cause) {}

  /**
   * A heartbeat could not extend the lease of running work ({@code error}: the store was down, or
   * anything unexpected). Beats go on until the work ends or the lease is found lost; a lost lease
   * is told by {@link #onLeaseLost}.
   */
  default void onHeartbeatFailed(IdempotencyKey key, long token, Throwable error) {}

  /**
   * Storing the outcome of work that ran (a value, a terminal failure, or a retryable failure's
   * release) failed, also when tried again: whether it is stored is unknown (see
   * {@link OutcomeUnknownException}). The key stays in progress until its lease passes unless it
   * was stored.
   */
  default void onOutcomeUnknown(IdempotencyKey key, long token, Throwable storeFailure) {}

  /**
   * One store call ({@code claim}, {@code complete}, {@code fail}, …) and how long it took: told
   * once per round trip to the store, also when it served several calls ({@code claimAll}), so
   * it counts store calls. {@link #onStoreCall(Call, String, Duration, boolean)} tells which
   * calls it served.
   */
  default void onStoreCall(String operation, Duration elapsed, boolean succeeded) {}

  /**
   * Coalesced store calls went around a call: {@code operation} is {@code claim} or
   * {@code complete}, {@code calls} how many callers' requests the detour carried. Counted, these
   * say how often the store answers late or rows are held while callers queue; both are harmless
   * now and then, but a steady rate of them means the calls coalescing was meant to save are made
   * anyway. Told only with coalescing on, once the callers are on their way; what this throws,
   * an {@link Error} too, is dropped, so that no caller is left waiting.
   */
  default void onCoalescingDetour(CoalescingDetour detour, String operation, int calls) {}

  /**
   * A call began: told before its first claim, on the thread that makes it; {@code call} does
   * not hold the claim yet.
   */
  default void onCallStarted(Call call) {}

  /**
   * A store call made for {@code call}, and how long the call waited for it. A store call serving
   * several calls (a batch's {@code claimAll}, a coalesced claim) is told to each of them; store
   * calls writing a failure down (after {@link #onFailed}, before the call ends) are not told
   * here.
   */
  default void onStoreCall(Call call, String operation, Duration elapsed, boolean succeeded) {}

  /**
   * {@code call} holds the claim: its token and attempt are set from here on; {@code takeover}
   * when a previous holder's lease had passed. {@code elapsed} runs from the call's start to now
   * (on the {@link Once}'s ticker, as {@link #onCallEnded}'s): the time from the claim held to
   * the call's end is {@code onCallEnded}'s {@code elapsed} minus this one.
   */
  default void onCallAcquired(Call call, boolean takeover, Duration elapsed) {}

  /**
   * {@code call} ended, and how; told once per {@link #onCallStarted}, after every other event
   * of the call: a failed call ends once its failure is settled (compensated, then stored or
   * released), as {@link CallOutcome#LEASE_LOST} if the lease was lost on the way and
   * {@link CallOutcome#OUTCOME_UNKNOWN} if the store failed writing it down. {@code elapsed} runs
   * from the call's start (its first claim included);
   * {@code failure} is the work's failure, the store's ({@link CallOutcome#OUTCOME_UNKNOWN},
   * {@link CallOutcome#NOT_RUN}) or the unexpected exception ({@link CallOutcome#ERROR}), else
   * null.
   */
  default void onCallEnded(Call call, CallOutcome outcome, Duration elapsed, Throwable failure) {}
}
