package dev.once.jaxrs;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.KeyReusedException;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OutcomeNotStoredException;
import dev.once.PayloadTooLargeException;
import dev.once.ReplayedFailureException;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.StoreUnavailableException;
import dev.once.http.HttpIdempotency;
import dev.once.http.IdempotencyProblem;
import dev.once.http.KeyHeader;
import dev.once.http.ProblemJson;
import dev.once.http.RequestFingerprint;
import dev.once.http.StoredResponse;
import dev.once.http.StoredResponseCodec;
import dev.once.http.Tenants;
import dev.once.jaxrs.internal.HeldCall;
import dev.once.jaxrs.internal.HoldingStream;
import dev.once.jaxrs.internal.ResponseNotStored;
import dev.once.support.RepeatedFailureLog;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.container.PreMatching;
import jakarta.ws.rs.container.ResourceInfo;
import jakarta.ws.rs.container.Suspended;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import jakarta.ws.rs.ext.RuntimeDelegate;
import jakarta.ws.rs.ext.WriterInterceptor;
import jakarta.ws.rs.ext.WriterInterceptorContext;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The request filter, response filter and writer interceptor of {@link IdempotencyFeature}: the
 * request filter claims (on a {@link HeldCall}'s thread) and lets the resource run only once the
 * key is acquired, else answers the replay or the problem; the response side holds the entity in
 * memory, hands the response to the call to store, and sends it once stored.
 */
final class IdempotencyFilters
    implements ContainerRequestFilter, ContainerResponseFilter, WriterInterceptor {

  static final String ATTEMPT_PROPERTY = IdempotencyFeature.class.getName() + ".attempt";
  private static final String HELD_PROPERTY = IdempotencyFeature.class.getName() + ".held";
  private static final String PROTECTION_PROPERTY =
      IdempotencyFeature.class.getName() + ".protection";
  private static final String STATUS_PROPERTY = IdempotencyFeature.class.getName() + ".status";
  private static final String DESCRIPTION_PROPERTY =
      IdempotencyFeature.class.getName() + ".description";

  private static final System.Logger LOG = System.getLogger(IdempotencyFeature.class.getName());
  /** A store outage fails every request alike: one stack trace, then a count per minute. */
  private static final RepeatedFailureLog OUTAGES = RepeatedFailureLog.of(LOG);
  /**
   * The held call of the request this thread runs, for the exception mapper: set by the request
   * filter, cleared by the mapper, by the response side, and at the start of every request
   * ({@link Boundary}), so a thread whose asynchronous resource suspended carries it no further.
   */
  private static final ThreadLocal<HeldCall<StoredResponse>> CURRENT = new ThreadLocal<>();
  private static final AtomicInteger THREADS = new AtomicInteger();
  /** The threads the claims run on, parked while their resource runs. */
  private static final ExecutorService CALLS = Executors.newCachedThreadPool(task -> {
    Thread thread = new Thread(task, "once-jaxrs-call-" + THREADS.incrementAndGet());
    thread.setDaemon(true);
    return thread;
  });

  /** Whether each resource method answers asynchronously. */
  private static final Map<Method, Boolean> ASYNC = new ConcurrentHashMap<>();

  private final List<Protection> protections;

  /** The matched resource method (injected by the runtime; null where it is not). */
  @Context
  private ResourceInfo resourceInfo;

  IdempotencyFilters(List<Protection> protections) {
    this.protections = List.copyOf(protections);
  }

  /**
   * {@code once} with the same settings, except that the filter's own release signal is never
   * terminal whatever the failure policy says.
   */
  static Once withReleasableClaims(Once once) {
    FailurePolicy policy = once.config().failurePolicy();
    return once.toBuilder()
        .failurePolicy(FailurePolicy.retryAll()
            .terminalIf(e -> !(e instanceof ResponseNotStored) && policy.isTerminal(e)))
        .build();
  }

  /**
   * {@code exception} was thrown while this thread handled a request (the mapper says): a failure
   * of the work if its resource had not come back yet; else an error after the work, which must
   * not make it run again.
   */
  static void applicationThrew(Throwable exception) {
    HeldCall<StoredResponse> held = CURRENT.get();
    CURRENT.remove();
    if (held == null || held.isDelivered()) {
      return;
    }
    if (held.hasComeBack()) {
      held.failedAfterWork(exception);
    } else {
      held.failed(exception);
    }
  }

  /** Whether the matched resource method answers asynchronously. */
  private boolean asyncResource() {
    Method method;
    try {
      method = resourceInfo == null ? null : resourceInfo.getResourceMethod();
    } catch (RuntimeException notInjected) {
      return false;
    }
    return method != null && ASYNC.computeIfAbsent(method, IdempotencyFilters::isAsync);
  }

  private static boolean isAsync(Method method) {
    if (CompletionStage.class.isAssignableFrom(method.getReturnType())) {
      return true;
    }
    for (Annotation[] annotations : method.getParameterAnnotations()) {
      for (Annotation annotation : annotations) {
        if (annotation.annotationType() == Suspended.class) {
          return true;
        }
      }
    }
    return false;
  }

  // --- request ----------------------------------------------------------------------------

  @Override
  public void filter(ContainerRequestContext request) throws IOException {
    CURRENT.remove();
    String method = request.getMethod();
    String path = path(request);
    Protection p = null;
    for (Protection candidate : protections) {
      if (candidate.protects(method, path)) {
        p = candidate;
        break;
      }
    }
    if (p == null) {
      return;
    }
    KeyHeader.Parsed parsed = KeyHeader.parse(request.getHeaders().get(p.keyHeader()),
        p.keyHeader());
    if (parsed.missing()) {
      if (p.keyRequired()) {
        abort(request, IdempotencyProblem.KEY_MISSING,
            HttpIdempotency.keyMissingDetail(method, path, p.keyHeader()));
      }
      return;
    }
    if (!parsed.valid()) {
      abort(request, IdempotencyProblem.KEY_INVALID, parsed.problem());
      return;
    }
    String identity = p.tenantResolver().resolve(request);
    if (identity == null) {
      abort(request, IdempotencyProblem.TENANT_UNKNOWN,
          HttpIdempotency.tenantUnknownDetail(p.keyHeader()));
      return;
    }
    byte[] body = readBody(request, p.maxRequestBytes());
    if (body == null) {
      abort(request, IdempotencyProblem.REQUEST_TOO_LARGE,
          HttpIdempotency.requestTooLargeDetail(p.keyHeader(), p.maxRequestBytes()));
      return;
    }
    request.setEntityStream(new ByteArrayInputStream(body));
    IdempotencyKey key;
    try {
      key = new IdempotencyKey(p.scope(), Tenants.normalize(identity), parsed.key());
    } catch (InvalidKeyException e) {
      abort(request, IdempotencyProblem.KEY_INVALID, e.getMessage());
      return;
    }
    Fingerprint fingerprint = RequestFingerprint.of(method, path,
        request.getUriInfo().getRequestUri().getRawQuery(),
        request.getHeaderString("Content-Type"), body);

    HeldCall<StoredResponse> held = HeldCall.start(CALLS, p.once(), key, fingerprint,
        StoredResponseCodec.INSTANCE, p.abandonAfter(), asyncResource());
    Attempt attempt;
    try {
      attempt = held.awaitStart();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      held.deliverFailure(new ResponseNotStored("interrupted", System.Logger.Level.DEBUG));
      throw new IOException("interrupted while claiming " + key, e);
    }
    if (attempt != null) {
      request.setProperty(ATTEMPT_PROPERTY, attempt);
      request.setProperty(HELD_PROPERTY, held);
      request.setProperty(PROTECTION_PROPERTY, p);
      request.setProperty(DESCRIPTION_PROPERTY, method + " " + path + " (key " + key + ")");
      CURRENT.set(held);
      return;
    }
    answerWithoutRunning(request, p, held);
  }

  private static void answerWithoutRunning(ContainerRequestContext request, Protection p,
      HeldCall<StoredResponse> held) {
    Result<StoredResponse> result;
    try {
      result = held.outcome();
    } catch (KeyReusedException e) {
      abort(request, IdempotencyProblem.KEY_REUSED,
          HttpIdempotency.keyReusedDetail(p.keyHeader()));
      return;
    } catch (RequestInProgressException e) {
      long seconds = HttpIdempotency.retryAfterSeconds(e.retryAfter(), p.retryAfter());
      abort(request, IdempotencyProblem.IN_PROGRESS, IdempotencyProblem.IN_PROGRESS.status(),
          HttpIdempotency.inProgressDetail(p.keyHeader(), seconds), seconds, List.of());
      return;
    } catch (ReplayedFailureException e) {
      abort(request, IdempotencyProblem.ORIGINAL_FAILED,
          HttpIdempotency.originalFailedDetail(p.keyHeader()));
      return;
    } catch (OutcomeNotStoredException e) {
      abort(request, IdempotencyProblem.RESPONSE_NOT_STORED,
          HttpIdempotency.notStoredDetail(p.keyHeader(), p.maxResponseBytes()));
      return;
    } catch (StoreUnavailableException e) {
      OUTAGES.log(System.Logger.Level.WARNING, "idempotency store unavailable", e);
      abort(request, IdempotencyProblem.STORE_UNAVAILABLE,
          HttpIdempotency.storeUnavailableDetail());
      return;
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
    replay(request, p, result.value());
  }

  private static void replay(ContainerRequestContext request, Protection p, StoredResponse stored) {
    if (!stored.bodyStored()) {
      List<StoredResponse.Header> headers = stored.headers().stream()
          .filter(h -> !h.name().equalsIgnoreCase("Content-Type")).toList();
      abort(request, IdempotencyProblem.RESPONSE_NOT_STORED, stored.status(),
          HttpIdempotency.notStoredDetail(p.keyHeader(), p.maxResponseBytes()), 0, headers);
      return;
    }
    Response.ResponseBuilder answer = Response.status(stored.status());
    for (StoredResponse.Header header : stored.headers()) {
      answer.header(header.name(), header.value());
    }
    answer.header(IdempotencyProblem.REPLAYED_HEADER, "true");
    // No Content-Length of our own: the answer passes through the application's writer
    // interceptors (a gzip encoder, say); the runtime counts what they write.
    if (stored.body().length > 0) {
      answer.entity(stored.body());
    }
    request.abortWith(answer.build());
  }

  private static void abort(ContainerRequestContext request, IdempotencyProblem problem,
      String detail) {
    abort(request, problem, problem.status(), detail, 1, List.of());
  }

  /** Answers {@code problem} as RFC 9457 problem+json, with the headers it carries. */
  private static void abort(ContainerRequestContext request, IdempotencyProblem problem,
      int status, String detail, long retryAfterSeconds, List<StoredResponse.Header> headers) {
    byte[] body = ProblemJson.of(problem, status, detail,
        request.getUriInfo().getRequestUri().getRawPath()).getBytes(StandardCharsets.UTF_8);
    Response.ResponseBuilder answer = Response.status(status);
    headers.forEach(h -> answer.header(h.name(), h.value()));
    if (problem.replayed()) {
      answer.header(IdempotencyProblem.REPLAYED_HEADER, "true");
    }
    if (problem.retryAfter()) {
      answer.header(IdempotencyProblem.RETRY_AFTER_HEADER, Long.toString(retryAfterSeconds));
    }
    request.abortWith(answer.entity(body).type(IdempotencyProblem.MEDIA_TYPE).build());
  }

  /** The body, at most {@code limit} bytes; null if longer. */
  private static byte[] readBody(ContainerRequestContext request, int limit) throws IOException {
    if (request.getLength() > limit) {
      return null;
    }
    if (!request.hasEntity()) {
      return new byte[0];
    }
    InputStream in = request.getEntityStream();
    byte[] bytes = in.readNBytes(limit + 1);
    return bytes.length > limit ? null : bytes;
  }

  /** The decoded path within the application, starting with {@code /}. */
  private static String path(ContainerRequestContext request) {
    String path = request.getUriInfo().getPath(true);
    return path.startsWith("/") ? path : "/" + path;
  }

  // --- response ---------------------------------------------------------------------------

  @Override
  @SuppressWarnings("unchecked")
  public void filter(ContainerRequestContext request, ContainerResponseContext response) {
    // Where the resource came back, should the runtime not have run Boundary yet (on Jersey 4
    // the feature's response filters are not reliably ordered before the application's).
    Boundary.mark(request, response);
    HeldCall<StoredResponse> held = (HeldCall<StoredResponse>) request.getProperty(HELD_PROPERTY);
    if (held == null || held.isDelivered()) {
      return;
    }
    Protection p = (Protection) request.getProperty(PROTECTION_PROPERTY);
    request.removeProperty(ATTEMPT_PROPERTY);
    String what = (String) request.getProperty(DESCRIPTION_PROPERTY);
    if (held.afterWork() != null) {
      // A response filter threw after the resource came back: the answer now is that error's,
      // not the resource's. Settle on what the resource came back with; never run it again.
      request.removeProperty(HELD_PROPERTY);
      CURRENT.remove();
      Object settlement = held.settlement();
      if (settlement == null) {
        settlement = cameBackWith(p, held, response.getStatus(),
            storedHeaders(p, response.getHeaders(), response.getMediaType()));
      }
      LOG.log(System.Logger.Level.WARNING, () -> "the response to " + what + " failed after its"
          + " resource came back (" + held.afterWork() + "); settled without its body, so it "
          + "does not run again", held.afterWork());
      settle(held, settlement, what);
      return;
    }
    if (response.hasEntity() && held.failure() == null) {
      // The entity is written later, through the writer interceptor: it finishes there.
      request.setProperty(STATUS_PROPERTY, response.getStatus());
      return;
    }
    request.removeProperty(HELD_PROPERTY);
    CURRENT.remove();
    StoredResponse stored = verdict(p, response.getStatus(),
        storedHeaders(p, response.getHeaders(), response.getMediaType()), new byte[0], false);
    finish(p, held, stored, what);
  }

  @Override
  @SuppressWarnings("unchecked")
  public void aroundWriteTo(WriterInterceptorContext context) throws IOException {
    HeldCall<StoredResponse> held = (HeldCall<StoredResponse>) context.getProperty(HELD_PROPERTY);
    if (held == null || held.isDelivered()) {
      context.proceed();
      return;
    }
    context.removeProperty(HELD_PROPERTY);
    CURRENT.remove();
    Protection p = (Protection) context.getProperty(PROTECTION_PROPERTY);
    int status = (Integer) context.getProperty(STATUS_PROPERTY);
    String what = (String) context.getProperty(DESCRIPTION_PROPERTY);
    OutputStream client = context.getOutputStream();
    HoldingStream holding = new HoldingStream(client, p.maxResponseBytes());
    context.setOutputStream(holding);
    try {
      context.proceed();
    } catch (IOException | RuntimeException | Error e) {
      // The resource returned; writing its entity failed (a MessageBodyWriter, an interceptor).
      // Not a failure of the work, which must not run again: its status and headers are stored
      // without the body (retries get idempotency-response-not-stored), and the runtime answers
      // this error (500).
      LOG.log(System.Logger.Level.WARNING, () -> "the response to " + what + " could not be"
          + " written after its resource returned (" + e + "); stored without its body, retries"
          + " get " + IdempotencyProblem.RESPONSE_NOT_STORED.type(), e);
      finish(p, held, new StoredResponse(status,
          storedHeaders(p, context.getHeaders(), context.getMediaType()), new byte[0])
          .withoutBody(), what);
      throw e;
    } finally {
      context.setOutputStream(client);
    }
    StoredResponse stored = verdict(p, status,
        storedHeaders(p, context.getHeaders(), context.getMediaType()), holding.body(),
        holding.overflowed());
    finish(p, held, stored, what);
    try {
      holding.sendHeld();
    } catch (IOException e) {
      LOG.log(System.Logger.Level.INFO, () -> "the client of " + what
          + " left before its response was sent (" + e + "); the outcome is stored, a retry "
          + "gets the replay");
      return;
    }
    if (holding.clientGone()) {
      LOG.log(System.Logger.Level.INFO, () -> "the client of " + what
          + " left while its response streamed; the outcome is stored, a retry gets the replay");
    }
  }

  /** What the call stores for this response: the response, or a reason not to store it. */
  private static StoredResponse verdict(Protection p, int status, List<StoredResponse.Header> headers,
      byte[] body, boolean overflowed) {
    return HttpIdempotency.storable(new StoredResponse(status, headers, body), overflowed,
        p.maxResponseBytes(), p.once().config().maxPayloadBytes(), LOG,
        () -> "response with status " + status);
  }

  /**
   * What the resource came back with, to settle on should its response not reach the feature:
   * its failure, a release for a retryable status, or its status and headers without the body.
   */
  private static Object cameBackWith(Protection p, HeldCall<StoredResponse> held, int status,
      List<StoredResponse.Header> headers) {
    if (held.failure() != null) {
      return held.failure();
    }
    if (status >= 500 && !p.storeServerErrors()) {
      return new ResponseNotStored("status " + status + " is retryable", System.Logger.Level.DEBUG);
    }
    return new StoredResponse(status, headers, new byte[0]).withoutBody();
  }

  /** Delivers the answer (or the resource's failure, or a release) and waits until stored. */
  private static void finish(Protection p, HeldCall<StoredResponse> held, StoredResponse stored,
      String what) {
    if (held.failure() == null && stored.status() >= 500 && !p.storeServerErrors()) {
      settle(held, new ResponseNotStored("status " + stored.status() + " is retryable",
          System.Logger.Level.DEBUG), what);
    } else {
      settle(held, stored, what);
    }
  }

  /** Delivers {@code verdict} (a response to store, or a failure) and waits until stored. */
  @SuppressWarnings("unchecked")
  private static void settle(HeldCall<StoredResponse> held, Object verdict, String what) {
    if (verdict instanceof Throwable failure) {
      held.deliverFailure(failure);
    } else {
      held.deliver((StoredResponse) verdict);
    }
    held.awaitStored();
    try {
      held.outcome();
    } catch (ResponseNotStored e) {
      LOG.log(e.level(), () -> "response to " + what + " not stored: " + e.getMessage()
          + "; the key may be retried");
    } catch (LeaseLostException | PayloadTooLargeException | StoreUnavailableException
        | OutcomeNotStoredException e) {
      if (held.failure() == null) {
        // The resource returned, but its outcome could not be stored: another worker took over
        // (its record stands) or the store failed. This client still gets its answer.
        LOG.log(System.Logger.Level.WARNING, () -> "response to " + what
            + " sent but not stored: " + e.getMessage(),
            e instanceof StoreUnavailableException ? e : null);
      }
    } catch (Throwable e) {
      // The resource's own failure, judged by the failure policy; its mapped answer is sent.
    }
  }

  private static List<StoredResponse.Header> storedHeaders(Protection p,
      MultivaluedMap<String, Object> headers, MediaType mediaType) {
    List<StoredResponse.Header> stored = new ArrayList<>();
    for (String name : p.replayHeaders()) {
      if (p.neverStored().contains(name.toLowerCase(Locale.ROOT))) {
        continue;
      }
      if (name.equalsIgnoreCase("Content-Type")) {
        if (mediaType != null) {
          stored.add(new StoredResponse.Header(name, mediaType.toString()));
        }
        continue;
      }
      for (Map.Entry<String, List<Object>> entry : headers.entrySet()) {
        if (entry.getKey().equalsIgnoreCase(name) && entry.getValue() != null) {
          for (Object value : entry.getValue()) {
            if (value != null) {
              stored.add(new StoredResponse.Header(name, headerText(value)));
            }
          }
        }
      }
    }
    return stored;
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static String headerText(Object value) {
    if (value instanceof String s) {
      return s;
    }
    try {
      RuntimeDelegate.HeaderDelegate delegate =
          RuntimeDelegate.getInstance().createHeaderDelegate(value.getClass());
      if (delegate != null) {
        return delegate.toString(value);
      }
    } catch (RuntimeException noDelegate) {
      // Fall back on toString(), as runtimes do for unknown header types.
    }
    return value.toString();
  }

  // --- the resource's boundary -------------------------------------------------------------

  /**
   * Runs at the start of every request, matched or not (pre-matching, first): clears
   * {@link #CURRENT}, so that a call a suspended (asynchronous) resource left on this thread is
   * never taken for this request's by the exception mapper.
   */
  @PreMatching
  static final class Reset implements ContainerRequestFilter {
    @Override
    public void filter(ContainerRequestContext request) {
      CURRENT.remove();
    }
  }

  /**
   * Meant as the first response filter: marks where the resource came back, so that what throws
   * from then on (a response filter, a writer) is an error after the work, never a failure of it.
   * Jersey 4 does not reliably run it before the application's response filters (a known limit:
   * see the README); writer failures, which come after every response filter, are covered. On Jersey
   * it also sees a {@code WebApplicationException} carrying an entity, which the runtime answers
   * without any exception mapper: a failure of the work like any other exception out of the
   * resource.
   */
  static final class Boundary implements ContainerResponseFilter {

    @Override
    @SuppressWarnings("unchecked")
    public void filter(ContainerRequestContext request, ContainerResponseContext response) {
      mark(request, response);
    }

    /** Marks where the resource came back, unless marked already. */
    @SuppressWarnings("unchecked")
    static void mark(ContainerRequestContext request, ContainerResponseContext response) {
      HeldCall<StoredResponse> held =
          (HeldCall<StoredResponse>) request.getProperty(HELD_PROPERTY);
      if (held == null || held.isDelivered() || held.hasComeBack()) {
        return;
      }
      if (held.failure() == null) {
        Throwable thrown = mappedThrowable(request.getUriInfo());
        if (thrown != null) {
          held.failed(thrown);
        }
      }
      Protection p = (Protection) request.getProperty(PROTECTION_PROPERTY);
      held.cameBack(cameBackWith(p, held, response.getStatus(),
          storedHeaders(p, response.getHeaders(), response.getMediaType())));
    }
  }

  /** Jersey's {@code ExtendedUriInfo#getMappedThrowable}: looked up reflectively, once a class. */
  private static final ClassValue<Method> MAPPED_THROWABLE = new ClassValue<>() {
    @Override
    protected Method computeValue(Class<?> type) {
      try {
        Method method = type.getMethod("getMappedThrowable");
        return Throwable.class.isAssignableFrom(method.getReturnType()) ? method : null;
      } catch (NoSuchMethodException | RuntimeException none) {
        return null;
      }
    }
  };

  /** The exception the runtime answered this request for so far, where it says (Jersey). */
  private static Throwable mappedThrowable(UriInfo info) {
    if (info == null) {
      return null;
    }
    Method method = MAPPED_THROWABLE.get(info.getClass());
    if (method == null) {
      return null;
    }
    try {
      return (Throwable) method.invoke(info);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
