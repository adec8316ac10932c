package dev.once.http;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * The settings and rules every Once HTTP adapter shares, so the servlet filter and the JAX-RS
 * filter answer alike: the default header names, methods and allow-lists, which headers may never
 * be stored, the {@code Retry-After} of a 409, and the problem details' wording.
 */
public final class HttpIdempotency {

  /** The request header that carries the key, per the IETF draft. */
  public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
  /** The scope of every key unless configured otherwise. */
  public static final String DEFAULT_SCOPE = "http";
  /** The methods protected unless configured otherwise. */
  public static final List<String> DEFAULT_METHODS = List.of("POST", "PATCH");
  /** The response headers stored and replayed unless configured otherwise. */
  public static final List<String> DEFAULT_REPLAY_HEADERS = List.of("Content-Type",
      "Content-Language", "Content-Location", "Location", "ETag", "Last-Modified", "Link");
  /** Headers never stored nor replayed, whatever the configuration. */
  public static final List<String> ALWAYS_EXCLUDED_HEADERS = List.of("Set-Cookie", "Set-Cookie2",
      "Authorization", "Proxy-Authorization");
  /** Headers the replay computes or that belong to one connection: refused in an allow-list. */
  public static final List<String> FRAMING_HEADERS = List.of("Content-Length",
      "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Trailer", "TE",
      IdempotencyProblem.REPLAYED_HEADER);
  /** The default bound on a request body read for its fingerprint: 1 MiB. */
  public static final int DEFAULT_MAX_REQUEST_BYTES = 1 << 20;
  /** The default wait a 409 asks for before a retry. */
  public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);

  private HttpIdempotency() {}

  /**
   * Checks a name for a replayed-headers allow-list.
   *
   * @throws IllegalArgumentException if it is no header name, a framing header or one never stored
   */
  public static void checkReplayHeader(String name) {
    checkHeaderName(name);
    if (containsIgnoreCase(FRAMING_HEADERS, name)) {
      throw new IllegalArgumentException(name + " is computed by the replay, not stored");
    }
    if (containsIgnoreCase(ALWAYS_EXCLUDED_HEADERS, name)) {
      throw new IllegalArgumentException(name + " is never stored nor replayed");
    }
  }

  /**
   * Checks an HTTP token (a header name or a method).
   *
   * @throws IllegalArgumentException if {@code name} is empty or not an RFC 9110 token
   */
  public static void checkHeaderName(String name) {
    if (name.isEmpty() || !name.chars().allMatch(HttpIdempotency::isTokenChar)) {
      throw new IllegalArgumentException("not a header name: '" + name + "'");
    }
  }

  /** Whether {@code c} may appear in an RFC 9110 token (a method, a header name). */
  public static boolean isTokenChar(int c) {
    return c > 0x20 && c < 0x7F && "\"(),/:;<=>?@[\\]{}".indexOf(c) < 0;
  }

  /** Whether {@code names} holds {@code name}, ignoring case. */
  public static boolean containsIgnoreCase(List<String> names, String name) {
    return names.stream().anyMatch(n -> n.equalsIgnoreCase(name));
  }

  /** {@code names} lower-cased, for lookups. */
  public static List<String> lowerCase(List<String> names) {
    return names.stream().map(n -> n.toLowerCase(Locale.ROOT)).toList();
  }

  /**
   * The {@code Retry-After} of a 409, in whole seconds: {@code retryAfter}, never more than the
   * lease the original has left, at least 1.
   */
  public static long retryAfterSeconds(Duration leaseLeft, Duration retryAfter) {
    Duration wait = leaseLeft.compareTo(retryAfter) < 0 ? leaseLeft : retryAfter;
    long seconds = wait.getSeconds() + (wait.getNano() > 0 ? 1 : 0);
    return Math.max(1, seconds);
  }

  /** The detail of {@link IdempotencyProblem#KEY_MISSING}. */
  public static String keyMissingDetail(String method, String path, String keyHeader) {
    return method + " " + path + " requires an " + keyHeader + " header";
  }

  /** The detail of {@link IdempotencyProblem#TENANT_UNKNOWN}. */
  public static String tenantUnknownDetail(String keyHeader) {
    return "the caller could not be identified, so its " + keyHeader + " cannot be scoped to it";
  }

  /** The detail of {@link IdempotencyProblem#REQUEST_TOO_LARGE}. */
  public static String requestTooLargeDetail(String keyHeader, int maxRequestBytes) {
    return "a request with an " + keyHeader + " may have a body of at most " + maxRequestBytes
        + " bytes";
  }

  /** The detail of {@link IdempotencyProblem#KEY_REUSED}. */
  public static String keyReusedDetail(String keyHeader) {
    return "this " + keyHeader
        + " was already used for a request with another method, path, query or body";
  }

  /** The detail of {@link IdempotencyProblem#IN_PROGRESS}. */
  public static String inProgressDetail(String keyHeader, long seconds) {
    return "a request with this " + keyHeader + " is still being processed; retry after "
        + seconds + " s";
  }

  /** The detail of {@link IdempotencyProblem#ORIGINAL_FAILED}. */
  public static String originalFailedDetail(String keyHeader) {
    return "the original request with this " + keyHeader + " failed";
  }

  /** The detail of {@link IdempotencyProblem#STORE_UNAVAILABLE}. */
  public static String storeUnavailableDetail() {
    return "the idempotency store could not be reached; nothing was executed";
  }

  /** The detail of {@link IdempotencyProblem#RESPONSE_NOT_STORED}. */
  public static String notStoredDetail(String keyHeader, int maxResponseBytes) {
    return "the original request with this " + keyHeader + " ran and is not run again, but its"
        + " response was larger than the server stores (" + maxResponseBytes + " bytes): only"
        + " its status and headers are replayed";
  }

  /**
   * What an adapter stores for a response it captured: {@code whole}, or — when its body
   * overflowed {@code maxResponseBytes}, or with its headers it is larger than the Once's
   * {@code maxPayloadBytes} — its status and headers alone, so the request is finished and a
   * retry is answered {@link IdempotencyProblem#RESPONSE_NOT_STORED} instead of running it again.
   * The second case is logged as a warning on {@code log}, naming {@code what} (e.g. "response
   * to POST /charges (key …)"); so is the first.
   */
  public static StoredResponse storable(StoredResponse whole, boolean overflowed,
      int maxResponseBytes, int maxPayloadBytes, System.Logger log,
      java.util.function.Supplier<String> what) {
    if (overflowed) {
      log.log(System.Logger.Level.WARNING, () -> what.get() + ": the body is larger than"
          + " maxResponseBytes (" + maxResponseBytes + "); stored without it, retries get "
          + IdempotencyProblem.RESPONSE_NOT_STORED.type());
      return whole.withoutBody();
    }
    long size = StoredResponseCodec.encodedSize(whole);
    if (size > maxPayloadBytes) {
      log.log(System.Logger.Level.WARNING, () -> what.get() + ": stored with its headers it is "
          + size + " bytes, more than the Once's maxPayloadBytes (" + maxPayloadBytes
          + "); stored without its body, retries get "
          + IdempotencyProblem.RESPONSE_NOT_STORED.type());
      return whole.withoutBody();
    }
    return whole;
  }
}
