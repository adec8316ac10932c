package dev.once.spi;

import dev.once.Codec;
import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.Once;
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

  /** The engine's logger, so a throwing listener is logged where it always was. */
  private static final System.Logger LOG = System.getLogger(Once.class.getName());

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

  /** Tells the listener, if any; a throwing listener is logged and ignored. */
  private static void notify(OnceListener listener, Consumer<OnceListener> event) {
    if (listener == null) {
      return;
    }
    try {
      event.accept(listener);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      // An Error too (a missing class in a metrics library): a listener must never decide
      // whether the work runs again.
      LOG.log(System.Logger.Level.WARNING, "OnceListener threw; ignored", e);
    }
  }
}
