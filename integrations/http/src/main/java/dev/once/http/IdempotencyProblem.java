package dev.once.http;

/**
 * The one HTTP vocabulary of Once: the situations in which Once answers instead of the
 * application, each with its HTTP status, a stable RFC 9457 problem {@code type} URI, a fixed
 * {@code title} and the headers it carries. The servlet filter, the JAX-RS filter, the Spring Boot
 * starter's answers for {@code @Idempotent} controllers and {@code once serve} all answer from this
 * one definition.
 * The body is {@code application/problem+json} ({@link #MEDIA_TYPE}) with {@code type},
 * {@code title}, {@code status}, {@code detail} and {@code instance} (the request's path).
 */
public enum IdempotencyProblem {

  /** A protected route was called without an {@code Idempotency-Key}. */
  KEY_MISSING(400, "idempotency-key-missing", "Idempotency-Key header missing", false, false),
  /** The key is empty, longer than 255 characters, not printable ASCII, not a valid sf-string, or sent twice. */
  KEY_INVALID(400, "idempotency-key-invalid", "Idempotency-Key header invalid", false, false),
  /** The tenant resolver could not identify the caller. */
  TENANT_UNKNOWN(403, "idempotency-tenant-unknown", "Caller not identified", false, false),
  /** The request body is larger than the filter reads to fingerprint it. */
  REQUEST_TOO_LARGE(413, "idempotency-request-too-large", "Request body too large", false, false),
  /** The key was already used for another request (method, path, query or body). */
  KEY_REUSED(422, "idempotency-key-reused", "Idempotency-Key reused for another request", false,
      false),
  /** The original request with this key is still being processed; with {@code Retry-After}. */
  IN_PROGRESS(409, "idempotency-request-in-progress", "Original request still in progress", true,
      false),
  /**
   * The original request failed with an exception that the failure policy made terminal; the
   * failure is replayed ({@code Idempotent-Replayed: true}).
   */
  ORIGINAL_FAILED(500, "idempotency-original-failed", "Original request failed", false, true),
  /**
   * The idempotency store could not be reached; nothing was executed. With
   * {@code Retry-After: 1}.
   */
  STORE_UNAVAILABLE(503, "idempotency-store-unavailable", "Idempotency store unavailable", true,
      false),
  /**
   * A retry of a request that ran, whose response body was larger than the filter stores: the
   * request is not run again, and the replay carries the original's status and stored headers
   * with this problem as its body. {@link #status()} says 200, the usual original status; the
   * replay answers whatever status the original had.
   */
  RESPONSE_NOT_STORED(200, "idempotency-response-not-stored", "Original response not stored",
      false, true);

  /** Where the problem types are documented: the module README, one anchor per type. */
  public static final String TYPE_BASE =
      "https://github.com/once-dev/once/blob/main/integrations/servlet/README.md#";
  /** The media type of every problem answer. */
  public static final String MEDIA_TYPE = "application/problem+json";
  /** The response header that marks a replay, with the value {@code true}. */
  public static final String REPLAYED_HEADER = "Idempotent-Replayed";
  /** The response header that says how many seconds to wait before a retry. */
  public static final String RETRY_AFTER_HEADER = "Retry-After";

  private final int status;
  private final String slug;
  private final String title;
  private final boolean retryAfter;
  private final boolean replayed;

  IdempotencyProblem(int status, String slug, String title, boolean retryAfter,
      boolean replayed) {
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.retryAfter = retryAfter;
    this.replayed = replayed;
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

  /**
   * Whether the answer carries {@link #RETRY_AFTER_HEADER}: the situation passes, a retry after
   * that many seconds may succeed ({@link #IN_PROGRESS}, {@link #STORE_UNAVAILABLE}).
   */
  public boolean retryAfter() {
    return retryAfter;
  }

  /**
   * Whether the answer carries {@code Idempotent-Replayed: true} ({@link #REPLAYED_HEADER}): it
   * answers for an original that ran ({@link #ORIGINAL_FAILED}, {@link #RESPONSE_NOT_STORED}).
   */
  public boolean replayed() {
    return replayed;
  }
}
