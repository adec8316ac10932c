package dev.once.batch;

import dev.once.support.Checks;
import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link BatchExecutor} retries, gives up and claims: the settings every consumer adapter
 * shares, with one set of defaults. Immutable; build one with {@link #builder()} (or derive one
 * with {@link #toBuilder()}) and hand it to {@link BatchExecutor.Builder#config} or to an adapter's
 * builder ({@code IdempotentConsumer}, {@code IdempotentRabbitConsumer},
 * {@code IdempotentSqsConsumer}, {@code IdempotentNatsConsumer}), whose own settings are only its
 * broker's.
 *
 * <pre>{@code
 * BatchConfig retries = BatchConfig.builder()
 *     .maxAttempts(3)
 *     .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(30))
 *     .build();
 * IdempotentRabbitConsumer orders = IdempotentRabbitConsumer.builder(once, handler)
 *     .queue("orders").deadLetterExchange("orders.dlx")
 *     .config(retries)
 *     .build();
 * }</pre>
 *
 * <p>Defaults ({@link #defaults()}): {@value #DEFAULT_MAX_ATTEMPTS} attempts; retry backoff
 * 100 ms doubling to 5 s; a message in progress on another worker looked at again after 1 s or at
 * the holder's lease end, whichever comes first; messages without a key dead-lettered; one
 * {@code claimAll} and one {@code completeAll} per batch.
 */
public final class BatchConfig {

  /** Default number of handler runs that may fail retryably before a message is dead-lettered. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;
  /** Default first retry backoff. */
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(100);
  /** Default longest retry backoff. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(5);
  /** Default pause before looking again at a message in progress on another worker. */
  public static final Duration DEFAULT_IN_PROGRESS_BACKOFF = Duration.ofSeconds(1);

  private static final BatchConfig DEFAULTS = builder().build();

  // Each setting is a field here with its default, a line in the copy constructor, a getter
  // below and a setter on the Builder: nothing else. The builder edits a BatchConfig of its own;
  // build() and toBuilder() copy it (BatchConfigTest checks that no field is left out).
  private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
  private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
  private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
  private Duration inProgressBackoff = DEFAULT_IN_PROGRESS_BACKOFF;
  private NoKeyPolicy noKeyPolicy = NoKeyPolicy.DEAD_LETTER;
  private boolean batchClaims = true;

  private BatchConfig() {}

  /** A copy of every setting (all are immutable values). */
  private BatchConfig(BatchConfig c) {
    this.maxAttempts = c.maxAttempts;
    this.initialBackoff = c.initialBackoff;
    this.maxBackoff = c.maxBackoff;
    this.inProgressBackoff = c.inProgressBackoff;
    this.noKeyPolicy = c.noKeyPolicy;
    this.batchClaims = c.batchClaims;
  }

  /** The defaults, as the class comment lists them. */
  public static BatchConfig defaults() {
    return DEFAULTS;
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder(new BatchConfig());
  }

  /** A builder starting from these settings. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** How many handler runs may fail retryably before the message is dead-lettered. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /** The pause after the first retryable failure. */
  public Duration initialBackoff() {
    return initialBackoff;
  }

  /** The longest pause between retries. */
  public Duration maxBackoff() {
    return maxBackoff;
  }

  /**
   * The pause after {@code attempts} failed handler runs: the initial backoff doubled for each
   * run after the first, capped at the longest.
   */
  public Duration backoff(int attempts) {
    Duration pause = initialBackoff;
    for (int i = 1; i < attempts && pause.compareTo(maxBackoff) < 0; i++) {
      pause = pause.multipliedBy(2);
    }
    return pause.compareTo(maxBackoff) <= 0 ? pause : maxBackoff;
  }

  /** How long before a message in progress on another worker is looked at again. */
  public Duration inProgressBackoff() {
    return inProgressBackoff;
  }

  /** What happens to a message from which no key derives. */
  public NoKeyPolicy noKeyPolicy() {
    return noKeyPolicy;
  }

  /** True: one {@code claimAll} and one {@code completeAll} per batch; false: one per message. */
  public boolean batchClaims() {
    return batchClaims;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BatchConfig c && maxAttempts == c.maxAttempts
        && initialBackoff.equals(c.initialBackoff) && maxBackoff.equals(c.maxBackoff)
        && inProgressBackoff.equals(c.inProgressBackoff) && noKeyPolicy == c.noKeyPolicy
        && batchClaims == c.batchClaims;
  }

  @Override
  public int hashCode() {
    return Objects.hash(maxAttempts, initialBackoff, maxBackoff, inProgressBackoff, noKeyPolicy,
        batchClaims);
  }

  @Override
  public String toString() {
    return "BatchConfig[maxAttempts=" + maxAttempts + ", retryBackoff=" + initialBackoff + ".."
        + maxBackoff + ", inProgressBackoff=" + inProgressBackoff + ", noKeyPolicy=" + noKeyPolicy
        + ", batchClaims=" + batchClaims + "]";
  }

  /** Builds a {@link BatchConfig}; each setter checks its value at once. */
  public static final class Builder {
    private final BatchConfig config;

    /** A builder editing a copy of {@code config}, which stays as it is. */
    private Builder(BatchConfig config) {
      this.config = new BatchConfig(config);
    }

    /**
     * How many handler runs may fail retryably before the message is dead-lettered
     * ({@link DeadLetter.Reason#RETRIES_EXHAUSTED}). Claims released unrun do not count.
     */
    public Builder maxAttempts(int attempts) {
      config.maxAttempts = Checks.positive(attempts, "maxAttempts");
      return this;
    }

    /** Backoff between retries: {@code initial}, doubling up to {@code max}. */
    public Builder retryBackoff(Duration initial, Duration max) {
      Checks.backoff(initial, max);
      config.initialBackoff = initial;
      config.maxBackoff = max;
      return this;
    }

    /**
     * How long to wait before looking again at a message in progress on another worker (or at
     * the holder's lease end, if sooner).
     */
    public Builder inProgressBackoff(Duration backoff) {
      config.inProgressBackoff = Checks.positive(backoff, "inProgressBackoff");
      return this;
    }

    /** What to do with messages without a key (default: dead-letter them). */
    public Builder noKeyPolicy(NoKeyPolicy policy) {
      config.noKeyPolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * True (the default): one {@code claimAll} and one {@code completeAll} per batch. False: one
     * claim per message just before it runs and one completion after, as {@code Once.call} does;
     * for comparison (benchmarks).
     */
    public Builder batchClaims(boolean batchClaims) {
      config.batchClaims = batchClaims;
      return this;
    }

    /** The config. */
    public BatchConfig build() {
      return new BatchConfig(config);
    }
  }
}
