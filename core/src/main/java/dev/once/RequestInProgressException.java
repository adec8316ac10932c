package dev.once;

import java.time.Duration;
import java.time.Instant;

/**
 * Another worker holds a live lease on the key (HTTP 409). Retry after {@link #retryAfter()}, when
 * the original has likely finished, or its lease has passed and the retry may take over.
 */
public class RequestInProgressException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;
  private final Instant leaseUntil;
  private final Duration retryAfter;

  public RequestInProgressException(IdempotencyKey key, Instant leaseUntil, Duration retryAfter) {
    super("idempotency key " + key + " is in progress elsewhere (lease until " + leaseUntil + ")");
    this.key = key;
    this.leaseUntil = leaseUntil;
    this.retryAfter = retryAfter;
  }

  public IdempotencyKey key() {
    return key;
  }

  /** When the current holder's lease ends unless it is extended. */
  public Instant leaseUntil() {
    return leaseUntil;
  }

  /** How long to wait before retrying: the time left on the lease, never negative. */
  public Duration retryAfter() {
    return retryAfter;
  }
}
