package dev.once;

/** A key, scope or tenant breaks the rules of {@link IdempotencyKey}. Nothing was stored. */
public class InvalidKeyException extends OnceException {
  private static final long serialVersionUID = 1L;

  public InvalidKeyException(String message) {
    super(message);
  }
}
