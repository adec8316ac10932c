package dev.once;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Decides whether an exception thrown by the logic is retryable (the record becomes FAILED and the
 * next claim runs the logic again) or terminal (stored as a FAILURE outcome and replayed to every
 * duplicate as {@link ReplayedFailureException}). Retryable unless a rule says terminal.
 *
 * <pre>{@code
 * FailurePolicy.retryAll().terminalOn(InsufficientFundsException.class)
 *     .terminalIf(e -> e instanceof HttpException h && h.status() < 500)
 * }</pre>
 *
 * Immutable: each method returns a new policy.
 */
public final class FailurePolicy {

  private static final FailurePolicy RETRY_ALL = new FailurePolicy(List.of());

  private final List<Predicate<Throwable>> terminal;

  private FailurePolicy(List<Predicate<Throwable>> terminal) {
    this.terminal = terminal;
  }

  /** Every failure is retryable. The default. */
  public static FailurePolicy retryAll() {
    return RETRY_ALL;
  }

  /** Failures of these types (or subtypes) are terminal. */
  @SafeVarargs
  public final FailurePolicy terminalOn(Class<? extends Throwable>... types) {
    Objects.requireNonNull(types, "types");
    FailurePolicy policy = this;
    for (Class<? extends Throwable> type : types) {
      Objects.requireNonNull(type, "type");
      policy = policy.terminalIf(type::isInstance);
    }
    return policy;
  }

  /** Failures matching the predicate are terminal. */
  public FailurePolicy terminalIf(Predicate<Throwable> predicate) {
    Objects.requireNonNull(predicate, "predicate");
    List<Predicate<Throwable>> rules = new ArrayList<>(terminal);
    rules.add(predicate);
    return new FailurePolicy(List.copyOf(rules));
  }

  /** Whether any rule can make a failure terminal; false for {@link #retryAll()}. */
  public boolean hasTerminalRules() {
    return !terminal.isEmpty();
  }

  /**
   * Whether {@code failure} is terminal. {@link StepFailedException} (a step's journaled terminal
   * failure) and {@link OutcomeNotStoredException} (a result that will never be available) always
   * are: running the work again could not end otherwise.
   */
  public boolean isTerminal(Throwable failure) {
    if (failure instanceof StepFailedException || failure instanceof OutcomeNotStoredException) {
      return true;
    }
    for (Predicate<Throwable> rule : terminal) {
      if (rule.test(failure)) {
        return true;
      }
    }
    return false;
  }
}
