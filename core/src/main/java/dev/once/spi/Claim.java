package dev.once.spi;

import dev.once.Checkpoint;
import java.time.Instant;
import java.util.Objects;

/** What a claim decided: exactly one of {@link Acquired}, {@link Replay}, {@link InProgress}, {@link Mismatch}. */
public sealed interface Claim {

  /**
   * Answers a claim that did not acquire the key, as every execution engine must (so that an
   * engine of another module, such as JDBC's transactional mode, answers exactly as {@code Once}
   * does): the replayed value, or the exception a duplicate gets, telling {@code listener}.
   *
   * @return the replayed value, {@code replayed()} true
   * @throws dev.once.ReplayedFailureException   the original failed terminally
   * @throws dev.once.OutcomeNotStoredException  the original ran, its value was not stored
   * @throws dev.once.KeyReusedException         the key was used with another fingerprint
   * @throws dev.once.RequestInProgressException another worker holds the key
   * @throws IllegalStateException               for {@link Acquired}: run the work instead
   */
  default <T> dev.once.Result<T> answer(dev.once.IdempotencyKey key, dev.once.Codec<T> codec,
      java.time.Clock clock, dev.once.OnceListener listener) {
    return ClaimAnswers.answer(key, this, codec, clock, listener);
  }

  /**
   * The caller now owns the key and runs the logic.
   *
   * @param token      the fencing token every later write must carry
   * @param takeover   true when a previous holder's lease had passed without an outcome
   * @param attempt    which attempt this is (1 for the first)
   * @param checkpoint the last checkpoint of an earlier attempt, or null
   * @param leaseUntil until when the claim is honoured
   */
  record Acquired(long token, boolean takeover, int attempt, Checkpoint checkpoint, Instant leaseUntil)
      implements Claim {
    public Acquired {
      Objects.requireNonNull(leaseUntil, "leaseUntil");
    }
  }

  /** The key completed with a matching fingerprint: replay {@code outcome}. */
  record Replay(Outcome outcome, long token) implements Claim {
    public Replay {
      Objects.requireNonNull(outcome, "outcome");
    }
  }

  /** Another worker holds a live lease until {@code leaseUntil}. */
  record InProgress(Instant leaseUntil) implements Claim {
    public InProgress {
      Objects.requireNonNull(leaseUntil, "leaseUntil");
    }
  }

  /** The key exists with another fingerprint. */
  record Mismatch() implements Claim {}
}
