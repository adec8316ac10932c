package dev.once.spring;

import dev.once.InvalidKeyException;
import dev.once.support.RepeatedFailureLog;
import dev.once.KeyReusedException;
import dev.once.OutcomeNotStoredException;
import dev.once.OutcomeUnknownException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.StoreUnavailableException;
import dev.once.servlet.IdempotencyFilter;
import dev.once.http.IdempotencyProblem;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.MissingRequestHeaderException;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;

/**
 * Answers Once's exceptions that leave a Spring MVC handler (an {@link Idempotent} method it
 * called, or a {@code Once} it used) as RFC 9457 {@code application/problem+json}, with the same
 * problem {@code type} URIs as the {@code Idempotency-Key} filter ({@link IdempotencyProblem}), so
 * clients see one vocabulary:
 *
 * <table>
 *   <caption>Answers</caption>
 *   <tr><th>exception</th><th>status</th><th>headers</th><th>type</th></tr>
 *   <tr><td>{@link KeyReusedException}</td><td>422</td><td></td><td>{@code idempotency-key-reused}</td></tr>
 *   <tr><td>{@link RequestInProgressException}</td><td>409</td><td>{@code Retry-After}</td>
 *       <td>{@code idempotency-request-in-progress}</td></tr>
 *   <tr><td>{@link ReplayedFailureException}</td><td>500</td><td>{@code Idempotent-Replayed: true}</td>
 *       <td>{@code idempotency-original-failed}</td></tr>
 *   <tr><td>{@link OutcomeNotStoredException}</td><td>200</td><td>{@code Idempotent-Replayed: true}</td>
 *       <td>{@code idempotency-response-not-stored}</td></tr>
 *   <tr><td>{@link StoreUnavailableException} (and {@link OutcomeUnknownException})</td><td>503</td>
 *       <td>{@code Retry-After: 1}</td><td>{@code idempotency-store-unavailable}</td></tr>
 *   <tr><td>{@link InvalidKeyException}: the key expression found none</td><td>400</td><td></td><td>{@code idempotency-key-missing}</td></tr>
 *   <tr><td>{@link MissingRequestHeaderException} of the key header</td><td>400</td><td></td><td>{@code idempotency-key-missing}</td></tr>
 *   <tr><td>{@link InvalidKeyException}: a malformed key</td><td>400</td><td></td><td>{@code idempotency-key-invalid}</td></tr>
 * </table>
 *
 * <p>{@code Retry-After} of a 409 is the lease left on the original, capped by
 * {@code once.http.retry-after} (1 s), in whole seconds rounded up, at least 1, as the filter
 * answers. Inside a request the filter protects, a {@link RequestInProgressException} is left to
 * propagate: the filter would store a 409 and replay it to every retry, whereas an exception
 * releases its key for the retry.
 *
 * <p>Ordered at 0, before advice without an order (as Spring Boot's own problem-details handler),
 * so that a catch-all {@code @ExceptionHandler(Exception.class)} does not turn these into 500s.
 * To answer otherwise, declare a bean of this class (a subclass overriding {@link #problem}, or
 * any of the handler methods), handle the exceptions in the controller or in advice ordered before
 * 0, or set {@code once.http.problem-details=false}.
 */
@ControllerAdvice
@Order(0)
public class IdempotentExceptionHandler {

  private static final Log LOG = LogFactory.getLog(IdempotentExceptionHandler.class);
  /** A store outage fails every call alike: one stack trace, then a count per minute. */
  private static final RepeatedFailureLog OUTAGES = RepeatedFailureLog.of(
      System.getLogger(IdempotentExceptionHandler.class.getName()));

  private final Duration retryAfter;
  private final String keyHeader;

  /** With a {@code Retry-After} of at most 1 s. */
  public IdempotentExceptionHandler() {
    this(IdempotencyFilter.DEFAULT_RETRY_AFTER);
  }

  /** With a {@code Retry-After} of at most {@code retryAfter} (positive). */
  public IdempotentExceptionHandler(Duration retryAfter) {
    this(retryAfter, IdempotencyFilter.IDEMPOTENCY_KEY_HEADER);
  }

  /**
   * With a {@code Retry-After} of at most {@code retryAfter} (positive), and {@code keyHeader}
   * (as {@code once.http.key-header}) the request header whose absence a controller that requires
   * it answers as {@code idempotency-key-missing}.
   */
  public IdempotentExceptionHandler(Duration retryAfter, String keyHeader) {
    Objects.requireNonNull(retryAfter, "retryAfter");
    Objects.requireNonNull(keyHeader, "keyHeader");
    if (retryAfter.isNegative() || retryAfter.isZero()) {
      throw new IllegalArgumentException("retryAfter must be positive, was " + retryAfter);
    }
    this.retryAfter = retryAfter;
    this.keyHeader = keyHeader;
  }

  /** 422: the key was used before with other arguments. */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> keyReused(KeyReusedException e) {
    return problem(IdempotencyProblem.KEY_REUSED, IdempotencyProblem.KEY_REUSED.status(),
        "this idempotency key was already used for a request with other arguments; use a new key"
            + " for a new operation", new HttpHeaders());
  }

  /**
   * 409 with {@code Retry-After}: the original call with this key is still running. Rethrown
   * inside a request the filter protects (see the class comment).
   */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> inProgress(RequestInProgressException e,
      HttpServletRequest request) {
    if (IdempotencyFilter.attempt(request).isPresent()) {
      throw e; // not handled here: the filter releases its key and the retry runs again
    }
    long seconds = retryAfterSeconds(e.retryAfter());
    HttpHeaders headers = new HttpHeaders();
    headers.set(IdempotencyProblem.RETRY_AFTER_HEADER, Long.toString(seconds));
    return problem(IdempotencyProblem.IN_PROGRESS, IdempotencyProblem.IN_PROGRESS.status(),
        "a call with this idempotency key is still being processed; retry after " + seconds
            + " s", headers);
  }

  /** 500 with {@code Idempotent-Replayed: true}: the original failed terminally; replayed. */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> originalFailed(ReplayedFailureException e) {
    return problem(IdempotencyProblem.ORIGINAL_FAILED, IdempotencyProblem.ORIGINAL_FAILED.status(),
        "the original call with this idempotency key failed; it is not run again", replayed());
  }

  /**
   * 200 with {@code Idempotent-Replayed: true}: the original ran and succeeded, and is not run
   * again, but its result was too large to store (or could not be written), so there is no value
   * to replay. Success, so that clients stop retrying; the body says what is missing.
   */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> notStored(OutcomeNotStoredException e) {
    return problem(IdempotencyProblem.RESPONSE_NOT_STORED,
        IdempotencyProblem.RESPONSE_NOT_STORED.status(),
        "the original call with this idempotency key ran and succeeded, and is not run again;"
            + " its result was not stored, so it cannot be sent again", replayed());
  }

  /**
   * 503 with {@code Retry-After: 1}: the store could not be reached. Before the work ran nothing
   * ran; after it ({@link OutcomeUnknownException}) a retry with the same key gets the stored
   * result, or runs the work again once the lease has passed if it was not stored. Logged as a
   * warning with the store's error the first time, then as a count per minute while it lasts.
   */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> storeUnavailable(StoreUnavailableException e) {
    OUTAGES.log(System.Logger.Level.WARNING, "idempotency store unavailable", e);
    HttpHeaders headers = new HttpHeaders();
    headers.set(IdempotencyProblem.RETRY_AFTER_HEADER, "1");
    String detail = e instanceof OutcomeUnknownException
        ? "the call ran, but its result could not be stored; retry with the same key"
        : "the idempotency store could not be reached; nothing was executed";
    return problem(IdempotencyProblem.STORE_UNAVAILABLE,
        IdempotencyProblem.STORE_UNAVAILABLE.status(), detail, headers);
  }

  /**
   * 400: the key (or tenant) the call was made with is missing or malformed, e.g. an
   * {@code @Idempotent} key read from a header the client did not send. The exception's message
   * (which may quote the key's expression) is logged at debug level, not sent.
   */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> invalidKey(InvalidKeyException e) {
    LOG.debug("invalid idempotency key: " + e.getMessage());
    if (e instanceof IdempotencyKeyMissingException) {
      // As the filter answers a request without its header: one vocabulary for both.
      return problem(IdempotencyProblem.KEY_MISSING, IdempotencyProblem.KEY_MISSING.status(),
          "this request needs an idempotency key", new HttpHeaders());
    }
    return problem(IdempotencyProblem.KEY_INVALID, IdempotencyProblem.KEY_INVALID.status(),
        "the idempotency key of this request is malformed: 1-255 printable ASCII characters",
        new HttpHeaders());
  }

  /**
   * 400 {@code idempotency-key-missing}: the controller declared the key header required
   * ({@code @RequestHeader("Idempotency-Key")}) and the request came without it, answered as the
   * filter answers it. A missing header of another name is left to Spring MVC (rethrown).
   *
   * @throws MissingRequestHeaderException {@code e}, when it is not the key header
   */
  @ExceptionHandler
  public ResponseEntity<ProblemDetail> keyHeaderMissing(MissingRequestHeaderException e)
      throws MissingRequestHeaderException {
    if (!e.getHeaderName().equalsIgnoreCase(keyHeader)) {
      throw e;
    }
    return problem(IdempotencyProblem.KEY_MISSING, IdempotencyProblem.KEY_MISSING.status(),
        "this request needs an idempotency key", new HttpHeaders());
  }

  /**
   * The answer: {@code problem}'s type and title, {@code status}, {@code detail} and
   * {@code headers}, as {@code application/problem+json}; Spring MVC adds the {@code instance}
   * (the request's path), as the filter does. Override it to change every answer.
   */
  protected ResponseEntity<ProblemDetail> problem(IdempotencyProblem problem, int status,
      String detail, HttpHeaders headers) {
    ProblemDetail body = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(status), detail);
    body.setType(URI.create(problem.type()));
    body.setTitle(problem.title());
    return ResponseEntity.status(status).headers(headers)
        .contentType(MediaType.APPLICATION_PROBLEM_JSON).body(body);
  }

  private static HttpHeaders replayed() {
    HttpHeaders headers = new HttpHeaders();
    headers.set(IdempotencyProblem.REPLAYED_HEADER, "true");
    return headers;
  }

  /** The filter's rule: the lease left, capped by the configured wait, rounded up, at least 1. */
  private long retryAfterSeconds(Duration leaseLeft) {
    Duration wait = leaseLeft.compareTo(retryAfter) < 0 ? leaseLeft : retryAfter;
    long seconds = wait.getSeconds() + (wait.getNano() > 0 ? 1 : 0);
    return Math.max(1, seconds);
  }
}
