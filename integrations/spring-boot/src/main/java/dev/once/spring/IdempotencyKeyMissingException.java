package dev.once.spring;

import dev.once.InvalidKeyException;

/**
 * An {@code @Idempotent} call whose key expression found no key (null or blank: a header the
 * client did not send). {@link IdempotentExceptionHandler} answers it as the filter answers a
 * request without its header (400 {@code idempotency-key-missing}) rather than as a malformed key;
 * an application with its own handler can tell the two apart the same way.
 */
public final class IdempotencyKeyMissingException extends InvalidKeyException {

  private static final long serialVersionUID = 1L;

  /** An exception saying {@code message}: which key expression of which method found no key. */
  public IdempotencyKeyMissingException(String message) {
    super(message);
  }
}
