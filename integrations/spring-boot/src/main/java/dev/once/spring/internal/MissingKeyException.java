package dev.once.spring.internal;

import dev.once.InvalidKeyException;

/**
 * An {@code @Idempotent} call whose key expression found no key (null or blank: a header the
 * client did not send), answered as the filter answers a request without its header
 * ({@code idempotency-key-missing}) rather than as a malformed key. Not API.
 */
public final class MissingKeyException extends InvalidKeyException {

  private static final long serialVersionUID = 1L;

  MissingKeyException(String message) {
    super(message);
  }
}
