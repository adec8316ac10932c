package dev.once.spi;

import dev.once.Codec;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.OnceListener;
import dev.once.OutcomeNotStoredException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import java.time.Clock;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * {@link Claim#answer}: what every engine answers for a claim that did not acquire. In the SPI's
 * own package, so the SPI does not depend on the engine for it.
 */
final class ClaimAnswers {

  private ClaimAnswers() {}

  static <T> Result<T> answer(IdempotencyKey key, Claim claim, Codec<T> codec, Clock clock,
      OnceListener listener) {
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

  /** Tells the listener, if any, guarded: a throwing listener is logged and ignored. */
  private static void notify(OnceListener listener, Consumer<OnceListener> event) {
    if (listener != null) {
      event.accept(OnceListener.guarded(listener));
    }
  }

}
