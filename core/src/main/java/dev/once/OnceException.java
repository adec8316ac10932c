package dev.once;

/** The base of every exception Once itself throws. Unchecked: the caller's own exceptions pass through as they are. */
public class OnceException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public OnceException(String message) {
    super(message);
  }

  public OnceException(String message, Throwable cause) {
    super(message, cause);
  }
}
