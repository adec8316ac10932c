package dev.once.spring;

import dev.once.batch.BatchConfig;
import dev.once.batch.NoKeyPolicy;
import java.time.Duration;

/**
 * The properties every idempotent consumer of the starter shares ({@code once.kafka.*},
 * {@code once.rabbitmq.*}): the adapter's {@link BatchConfig} ({@link #toBatchConfig()}), and
 * the scope. Every default is {@link BatchConfig#defaults()}.
 */
public abstract class OnceConsumerProperties {

  /** Make the adapter's listener factory bean (with the adapter, its Spring library and a Once). */
  private boolean enabled = true;

  /** The scope of the idempotency keys of every listener made; unset: the adapter's default. */
  private String scope;

  /** How many times a handler may fail retryably before the message is dead-lettered. */
  private int maxAttempts = BatchConfig.DEFAULT_MAX_ATTEMPTS;

  /** How long before looking again at a message in progress on another consumer. */
  private Duration inProgressBackoff = BatchConfig.DEFAULT_IN_PROGRESS_BACKOFF;

  /** What to do with a message without a key: dead-letter (the default) or process-unprotected. */
  private NoKeyPolicy noKeyPolicy = NoKeyPolicy.DEAD_LETTER;

  /** One claim per batch (true), or one per message just before it runs (false). */
  private boolean batchClaims = true;

  private final RetryBackoff retryBackoff = new RetryBackoff();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getScope() {
    return scope;
  }

  public void setScope(String scope) {
    this.scope = scope;
  }

  public int getMaxAttempts() {
    return maxAttempts;
  }

  public void setMaxAttempts(int maxAttempts) {
    this.maxAttempts = maxAttempts;
  }

  public Duration getInProgressBackoff() {
    return inProgressBackoff;
  }

  public void setInProgressBackoff(Duration inProgressBackoff) {
    this.inProgressBackoff = inProgressBackoff;
  }

  public boolean isBatchClaims() {
    return batchClaims;
  }

  public void setBatchClaims(boolean batchClaims) {
    this.batchClaims = batchClaims;
  }

  public NoKeyPolicy getNoKeyPolicy() {
    return noKeyPolicy;
  }

  public void setNoKeyPolicy(NoKeyPolicy noKeyPolicy) {
    this.noKeyPolicy = noKeyPolicy;
  }

  public RetryBackoff getRetryBackoff() {
    return retryBackoff;
  }

  /**
   * The engine settings these properties name.
   *
   * @throws IllegalArgumentException if one is invalid (the config builder's message names it)
   */
  public BatchConfig toBatchConfig() {
    return BatchConfig.builder()
        .maxAttempts(maxAttempts)
        .retryBackoff(retryBackoff.getInitial(), retryBackoff.getMax())
        .inProgressBackoff(inProgressBackoff)
        .noKeyPolicy(noKeyPolicy)
        .batchClaims(batchClaims)
        .build();
  }

  /** {@code *.retry-backoff.*}: the pause before a failed message runs again, doubling. */
  public static class RetryBackoff {
    /** The first pause. */
    private Duration initial = BatchConfig.DEFAULT_INITIAL_BACKOFF;
    /** The longest pause. */
    private Duration max = BatchConfig.DEFAULT_MAX_BACKOFF;

    public Duration getInitial() {
      return initial;
    }

    public void setInitial(Duration initial) {
      this.initial = initial;
    }

    public Duration getMax() {
      return max;
    }

    public void setMax(Duration max) {
      this.max = max;
    }
  }
}
