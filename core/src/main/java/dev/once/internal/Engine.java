package dev.once.internal;

import dev.once.Codec;
import dev.once.IdempotencyKey;
import dev.once.OnceListener;
import dev.once.Result;
import dev.once.spi.Claim;
import dev.once.spi.Outcome;
import java.time.Clock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The engine's one door for the engines of this project's other modules, which must tell the
 * listener and answer duplicates exactly as {@code Once} does: today JDBC's transactional mode,
 * which runs the claim, the work and the outcome in the application's own transaction and so cannot
 * go through {@code Once}. Not API and not SPI: no application or store author needs it, it may
 * change in any release, and the architecture test lets other modules of this project reach
 * {@code dev.once.internal} through this class and the {@link CallEvents} it hands out only.
 */
public final class Engine {

  private Engine() {}

  /**
   * A call of {@code key} starts: the listener's view of it, which tells
   * {@link OnceListener#onCallStarted} now and every event of the call after it, each guarded (a
   * throwing listener is logged and ignored), ending the call on the event that decides it.
   *
   * @param listener who observes, or null for nobody (the events then cost nothing)
   * @param ticker   where the durations told come from, in nanoseconds
   */
  public static CallEvents startCall(OnceListener listener, LongSupplier ticker,
      IdempotencyKey key) {
    return CallEvents.start(listener, ticker, key);
  }

  /**
   * Answers a claim that did not acquire the key, as {@code Once} does, telling {@code call}.
   *
   * @return the replayed value, {@code replayed()} true
   * @throws dev.once.ReplayedFailureException   the original failed terminally
   * @throws dev.once.OutcomeNotStoredException  the original ran, its value was not stored
   * @throws dev.once.KeyReusedException         the key was used with another fingerprint
   * @throws dev.once.RequestInProgressException another worker holds the key
   * @throws IllegalStateException               for {@link Claim.Acquired}: run the work instead
   */
  public static <T> Result<T> answer(Claim claim, IdempotencyKey key, Codec<T> codec, Clock clock,
      CallEvents call) {
    return ClaimAnswers.answer(key, claim, codec, clock, call);
  }

  /**
   * The outcome to store for the value the work returned, as {@code Once} stores it: {@code value}
   * encoded by {@code codec}; or, when it cannot be stored (larger than {@code maxPayloadBytes},
   * or the codec threw), the {@link Outcome#notStored} marker, after a warning and telling
   * {@code onNotStored} why. The work has run: a value that cannot be stored must still finish
   * the key, never make it run again.
   */
  public static <T> Outcome encodeOrNotStored(Codec<T> codec, T value, int maxPayloadBytes,
      Object what, Consumer<Throwable> onNotStored) {
    return Outcomes.encodeOrNotStored(codec, value, maxPayloadBytes, what, onNotStored);
  }
}
