package dev.once.kafka;

/** What an {@link IdempotentConsumer} does with a record from which no idempotency key derives. */
public enum NoKeyPolicy {

  /** Publish it to the dead-letter topic (reason {@code NO_KEY}) without running the handler. The default. */
  DEAD_LETTER,

  /**
   * Run the handler without protection (its attempt is null), logging a warning: a redelivery runs
   * it again. Failures are still retried and dead-lettered, counted in memory only.
   */
  PROCESS_UNPROTECTED
}
