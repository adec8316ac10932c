package dev.once;

/**
 * The key is already recorded with another fingerprint: a client reused a key for a different
 * request (HTTP 422). Holds in every status of the existing record. Nothing was changed.
 */
public class KeyReusedException extends OnceException {
  private static final long serialVersionUID = 1L;

  private final transient IdempotencyKey key;

  public KeyReusedException(IdempotencyKey key) {
    super("idempotency key " + key + " was already used with a different request");
    this.key = key;
  }

  public IdempotencyKey key() {
    return key;
  }
}
