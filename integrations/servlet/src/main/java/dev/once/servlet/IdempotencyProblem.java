package dev.once.servlet;

/**
 * The situations in which the filter answers instead of the application, each with its HTTP
 * status and a stable RFC 9457 problem {@code type} URI. The body is {@code application/problem+json}
 * with {@code type}, {@code title}, {@code status} and {@code detail}.
 */
public enum IdempotencyProblem {

  /** A protected route was called without an {@code Idempotency-Key}. */
  KEY_MISSING(400, "idempotency-key-missing", "Idempotency-Key header missing"),
  /** The key is empty, longer than 255 characters, not printable ASCII, not a valid sf-string, or sent twice. */
  KEY_INVALID(400, "idempotency-key-invalid", "Idempotency-Key header invalid"),
  /** The tenant resolver could not identify the caller. */
  TENANT_UNKNOWN(403, "idempotency-tenant-unknown", "Caller not identified"),
  /** The request body is larger than the filter reads to fingerprint it. */
  REQUEST_TOO_LARGE(413, "idempotency-request-too-large", "Request body too large"),
  /** The key was already used for another request (method, path, query or body). */
  KEY_REUSED(422, "idempotency-key-reused", "Idempotency-Key reused for another request"),
  /** The original request with this key is still being processed. */
  IN_PROGRESS(409, "idempotency-request-in-progress", "Original request still in progress"),
  /** The original request failed with an exception that the failure policy made terminal. */
  ORIGINAL_FAILED(500, "idempotency-original-failed", "Original request failed"),
  /** The idempotency store could not be reached; nothing was executed. */
  STORE_UNAVAILABLE(503, "idempotency-store-unavailable", "Idempotency store unavailable"),
  /**
   * A retry of a request that ran, whose response body was larger than the filter stores: the
   * request is not run again, and the replay carries the original's status and stored headers
   * with this problem as its body. {@link #status()} says 200, the usual original status; the
   * replay answers whatever status the original had.
   */
  RESPONSE_NOT_STORED(200, "idempotency-response-not-stored", "Original response not stored");

  /** Where the problem types are documented: the module README, one anchor per type. */
  public static final String TYPE_BASE =
      "https://github.com/once-dev/once/blob/main/integrations/servlet/README.md#";

  private final int status;
  private final String slug;
  private final String title;

  IdempotencyProblem(int status, String slug, String title) {
    this.status = status;
    this.slug = slug;
    this.title = title;
  }

  /** The HTTP status answered. */
  public int status() {
    return status;
  }

  /** The problem {@code type} URI: {@link #TYPE_BASE} followed by a stable slug. */
  public String type() {
    return TYPE_BASE + slug;
  }

  /** The short, fixed {@code title}. */
  public String title() {
    return title;
  }
}
