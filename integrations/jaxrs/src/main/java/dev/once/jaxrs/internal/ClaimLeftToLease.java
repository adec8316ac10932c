package dev.once.jaxrs.internal;

import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;

/**
 * Thrown out of the held call's work when an asynchronous resource gave no answer within
 * {@code abandonAfter}: the call stops waiting but neither fails nor releases the claim (its
 * resource may still be running on a thread of its own). A {@link LeaseLostException}, the one
 * failure {@code Once} leaves as it is: the record stays in progress, unrenewed, until its lease
 * passes; a duplicate gets 409 until then. Carries no stack trace: it is a signal.
 */
public final class ClaimLeftToLease extends LeaseLostException {
  private static final long serialVersionUID = 1L;

  private final String reason;

  public ClaimLeftToLease(IdempotencyKey key, long token, String reason) {
    super(key, token);
    this.reason = reason;
  }

  @Override
  public String getMessage() {
    return reason;
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
