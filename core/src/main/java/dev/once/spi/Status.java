package dev.once.spi;

/** The status of a stored record; see the state machine in the README. */
public enum Status {
  /** A worker holds (or held, until {@code leaseUntil}) the claim and is running the logic. */
  IN_PROGRESS,
  /** Finished with a SUCCESS or terminal FAILURE outcome; replayed to duplicates. */
  COMPLETED,
  /** The last attempt failed in a retryable way; the next claim runs the logic again (token + 1). */
  FAILED
}
