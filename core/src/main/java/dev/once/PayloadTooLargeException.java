package dev.once;

/**
 * An outcome or checkpoint is larger than the configured bound ({@link Once.Builder#maxPayloadBytes}
 * or the store's own limit). It was not stored.
 */
public class PayloadTooLargeException extends OnceException {
  private static final long serialVersionUID = 1L;

  public PayloadTooLargeException(String what, int size, int limit) {
    super(what + " is " + size + " bytes, more than the limit of " + limit + " bytes");
  }
}
