package dev.once.spi;

import dev.once.Checkpoint;
import java.time.Instant;
import java.util.Objects;

/** What a claim decided: exactly one of {@link Acquired}, {@link Replay}, {@link InProgress}, {@link Mismatch}. */
public sealed interface Claim {

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
