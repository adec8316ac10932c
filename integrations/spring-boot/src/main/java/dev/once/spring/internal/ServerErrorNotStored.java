package dev.once.spring.internal;

import org.springframework.http.ResponseEntity;

/**
 * A {@code ResponseEntity} with a 5xx status that an {@code @Idempotent} method returned: not
 * stored (unless {@code once.http.store-server-errors}), as the servlet filter does not store a
 * server error, so a retry runs again rather than replaying an outage for the whole retention.
 * Thrown out of the work so that Once releases the key, and caught to answer the response as it
 * is. Not API.
 */
final class ServerErrorNotStored extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient Object response;

  private ServerErrorNotStored(Object response, int status) {
    super("a " + status + " response is not stored; the key is released for a retry", null,
        false, false);
    this.response = response;
  }

  /** {@code value}, unless it is a server error not to store: then throws. */
  static Object check(Object value, boolean storeServerErrors) {
    if (!storeServerErrors && value instanceof ResponseEntity<?> entity
        && entity.getStatusCode().is5xxServerError()) {
      throw new ServerErrorNotStored(value, entity.getStatusCode().value());
    }
    return value;
  }

  Object response() {
    return response;
  }
}
