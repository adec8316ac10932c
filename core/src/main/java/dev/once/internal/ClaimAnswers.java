package dev.once.internal;

import dev.once.Codec;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * What every engine answers for a claim that did not acquire: the replayed value, or the exception
 * a duplicate gets, told to the call's listener. {@code Once} (blocking or not) and, through
 * {@link Engine#answer}, JDBC's transactional mode answer through it, so they answer alike.
 */
final class ClaimAnswers {

  private ClaimAnswers() {}

  static <T> Result<T> answer(IdempotencyKey key, Claim claim, Codec<T> codec, Clock clock,
      OnceListener listener) {
    if (claim instanceof Claim.Acquired) {
      throw new IllegalStateException("the claim of " + key + " was acquired: run the work");
    }
    if (claim instanceof Claim.Replay replay) {
      notify(listener, l -> l.onReplayed(key));
      Outcome outcome = replay.outcome();
      if (outcome.isNotStored()) {
        throw new OutcomeNotStoredException(key, outcome.notStoredReason());
      }
      if (outcome.kind() == Outcome.Kind.FAILURE) {
        throw new ReplayedFailureException(key, outcome.failureType(), outcome.failureMessage());
      }
      return new Result<>(codec.decode(outcome.body()), true, replay.token());
    }
    if (claim instanceof Claim.Mismatch) {
      notify(listener, l -> l.onMismatch(key));
      throw new KeyReusedException(key);
    }
    Claim.InProgress inProgress = (Claim.InProgress) claim;
    notify(listener, l -> l.onInProgress(key));
    Duration retryAfter = Duration.between(clock.instant(), inProgress.leaseUntil());
    throw new RequestInProgressException(key, inProgress.leaseUntil(),
        retryAfter.isNegative() ? Duration.ZERO : retryAfter);
  }

  private static void notify(OnceListener listener, Consumer<OnceListener> event) {
    Execution.notify(listener, event);
  }

}
