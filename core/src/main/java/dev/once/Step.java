package dev.once;

import java.util.Objects;
import java.util.Optional;

/**
 * A named step of the work, run at most once per key however often the work is retried or taken
 * over: its result is journaled in the key's record under the fencing token, and an attempt that
 * reaches a journaled step gets the result back without running it again. For effects whose
 * downstream cannot deduplicate (an e-mail, a ledger in another service, an API without
 * idempotency keys).
 *
 * <pre>{@code
 * Receipt receipt = attempt.step(
 *     Step.of("charge", JsonCodec.of(Receipt.class))
 *         .reconcile(ref -> gateway.findByReference(ref))          // did a crashed attempt charge?
 *         .compensate((r, ref) -> gateway.refund(r.id(), ref)),    // undone if the saga fails
 *     ref -> gateway.charge(order, ref));                           // ref: a stable step key
 * }</pre>
 *
 * <p>One window remains that no journal can close: a worker that dies after the downstream call
 * but before the step's result is journaled. Without a {@linkplain #reconcile reconciler} a
 * takeover runs the step again. With one, the step journals that it started before running, and a
 * takeover that finds it started asks the reconciler first: a result found is journaled and the
 * step is not run again; nothing found runs it.
 *
 * <p>Failures inside a step follow the {@link FailurePolicy}: a terminal one is journaled and every
 * later attempt that reaches the step gets {@link StepFailedException}; a retryable one is not
 * journaled, so the next attempt runs the step again. When the work ends in a terminal failure,
 * the {@linkplain #compensate compensations} of the steps it completed run in reverse order, each
 * once (journaled), before the failure is stored.
 *
 * @param <T> the step's result
 */
public final class Step<T> {

  /** Longest accepted step name. */
  public static final int MAX_NAME_LENGTH = 100;

  private final String name;
  private final Codec<T> codec;
  private final Reconciler<T> reconciler;
  private final Compensation<T> compensation;

  private Step(String name, Codec<T> codec, Reconciler<T> reconciler,
      Compensation<T> compensation) {
    this.name = name;
    this.codec = codec;
    this.reconciler = reconciler;
    this.compensation = compensation;
  }

  /**
   * A step named {@code name} (1–{@value #MAX_NAME_LENGTH} printable characters, unique within the
   * work) whose result {@code codec} journals.
   */
  public static <T> Step<T> of(String name, Codec<T> codec) {
    Objects.requireNonNull(name, "step name");
    Objects.requireNonNull(codec, "codec");
    if (name.isEmpty() || name.length() > MAX_NAME_LENGTH
        || !name.chars().allMatch(c -> c >= 0x20 && c != 0x7F)) {
      throw new IllegalArgumentException("a step name is 1–" + MAX_NAME_LENGTH
          + " printable characters, was '" + name + "'");
    }
    return new Step<>(name, codec, null, null);
  }

  /**
   * Asks the downstream, on a takeover that finds this step started but not finished, whether the
   * effect already happened (e.g. "find the payment with this reference"). Costs one more store
   * write per run of the step (the start is journaled).
   */
  public Step<T> reconcile(Reconciler<T> reconciler) {
    return new Step<>(name, codec, Objects.requireNonNull(reconciler, "reconciler"), compensation);
  }

  /** Undoes this step's effect if the work ends in a terminal failure after it completed. */
  public Step<T> compensate(Compensation<T> compensation) {
    return new Step<>(name, codec, reconciler, Objects.requireNonNull(compensation,
        "compensation"));
  }

  public String name() {
    return name;
  }

  public Codec<T> codec() {
    return codec;
  }

  /** The reconciler, if one was declared. */
  public Optional<Reconciler<T>> reconciler() {
    return Optional.ofNullable(reconciler);
  }

  /** The compensation, if one was declared. */
  public Optional<Compensation<T>> compensation() {
    return Optional.ofNullable(compensation);
  }

  /**
   * What a step does.
   *
   * @param <T> its result
   * @param <X> the checked exception it may throw
   */
  @FunctionalInterface
  public interface Body<T, X extends Exception> {
    /**
     * Runs the step. {@code stepKey} is stable across attempts ({@link Attempt#key(String)} of the
     * step's name): pass it downstream as its idempotency key or reference where it takes one.
     */
    T run(String stepKey) throws X;
  }

  /**
   * Finds an effect a crashed attempt may have made.
   *
   * @param <T> the step's result
   */
  @FunctionalInterface
  public interface Reconciler<T> {
    /** The result of the effect made under {@code stepKey}, or empty if there was none. */
    Optional<T> find(String stepKey) throws Exception;
  }

  /**
   * Undoes a completed step.
   *
   * @param <T> the step's result
   */
  @FunctionalInterface
  public interface Compensation<T> {
    /**
     * Undoes the effect that produced {@code result}. {@code compensationKey} is stable across
     * attempts: a compensation that a crash interrupts runs again, so make it idempotent on it.
     */
    void undo(T result, String compensationKey) throws Exception;
  }
}
