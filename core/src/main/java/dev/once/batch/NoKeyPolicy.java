package dev.once.batch;

/** What happens to a message from which no idempotency key can be derived. */
public enum NoKeyPolicy {
  /** Dead-lettered with {@link DeadLetter.Reason#NO_KEY}, never handled. The default. */
  DEAD_LETTER,
  /**
   * Handled without protection: a redelivery runs it again. Its failures are counted in memory
   * (by {@link BatchExecutor.Builder#messageId}) for the retry limit.
   */
  PROCESS_UNPROTECTED
}
