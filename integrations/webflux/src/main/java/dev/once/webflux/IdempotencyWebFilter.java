package dev.once.webflux;

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
import dev.once.http.PathPatterns;
import dev.once.http.RequestFingerprint;
import dev.once.http.StoredResponse;
import dev.once.http.StoredResponseCodec;
import dev.once.http.Tenants;
import dev.once.support.Checks;
import dev.once.support.RepeatedFailureLog;
import dev.once.webflux.internal.CachedBody;
import dev.once.webflux.internal.CapturingResponse;
import dev.once.webflux.internal.Problems;
import dev.once.webflux.internal.ResponseNotStored;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import org.springframework.web.util.UriUtils;
import reactor.core.publisher.Mono;

/**
 * A Spring WebFlux {@link WebFilter} that makes unsafe HTTP requests idempotent per the IETF
 * {@code Idempotency-Key} header draft, with exactly the contract of the servlet filter
 * ({@code dev.once.servlet.IdempotencyFilter}): the first request with a key runs the application
 * once; every retry with the same key and the same request gets the original response back, byte
 * for byte, marked {@code Idempotent-Replayed: true}.
 *
 * <pre>{@code
 * IdempotencyWebFilter filter = IdempotencyWebFilter.builder(once)  // Once over any store
 *     .paths("/payments/**")                                       // POST and PATCH by default
 *     .tenantResolver(TenantResolver.principal())                  // one client never sees another's
 *     .build();
 * // a @Bean in a WebFlux application, or WebHttpHandlerBuilder.filter(filter)
 * }</pre>
 *
 * <p><b>Non-blocking.</b> Nothing here blocks the thread that calls it: the claim, storing the
 * outcome, and any wait for an original in progress run through {@link Once#callAsync} on the
 * {@code Once}'s {@link Once.Builder#asyncExecutor asyncExecutor}, whose threads block on the
 * store. The application's chain is subscribed on that executor's thread once the claim is held;
 * reactive code moves to its own schedulers as usual.
 *
 * <p>What it answers itself ({@code application/problem+json}, see {@link IdempotencyProblem}):
 * a missing key 400, a malformed key 400, an unidentified caller 403, a body over
 * {@link Builder#maxRequestBytes} 413, a key reused for another request 422, a request whose
 * original still runs 409 with {@code Retry-After} (or, if the {@link Once} waits in progress,
 * the replay once it finishes), a store failure before the application ran 503.
 *
 * <p>Stored and replayed: responses below 500 (500 and above only with
 * {@link Builder#storeServerErrors}), with the allow-listed headers ({@link Builder#replayHeaders})
 * and never {@code Set-Cookie}, {@code Authorization} or the headers of
 * {@link Builder#neverStoreHeaders}. Not stored, the claim released as retryable (FAILED): a 5xx,
 * and an error out of the application's chain before it answered (a
 * {@code ResponseStatusException} included; the error handlers answer it after the filter). An
 * error after it answered (a body write delivered a buffer or completed, or
 * {@code setComplete()} was called) never makes it run again: a whole answer is stored and sent,
 * one cut short is stored without its body, as an answer over {@link Builder#maxResponseBytes}
 * (retries get its status with {@link IdempotencyProblem#RESPONSE_NOT_STORED}; this client the
 * error handlers' answer).
 *
 * <p>Nothing that happens after the application answered makes it run again. Its response is
 * held back until the outcome is stored, then sent: a client that hangs up mid-answer, or retries
 * the instant the answer arrives, gets the replay. A response body larger than
 * {@link Builder#maxResponseBytes} streams to the client once it passes the bound and is stored
 * without its body: retries get the original status and headers with an
 * {@link IdempotencyProblem#RESPONSE_NOT_STORED} body, and the application does not run again.
 *
 * <p>The running {@link Attempt} is available to the application through {@link #attempt}; pass
 * its {@link Attempt#key()} to downstream services so a re-run after a crash is deduplicated
 * there too. Thread-safe.
 */
public final class IdempotencyWebFilter implements WebFilter {

  /** The request header that carries the key, per the IETF draft. */
  public static final String IDEMPOTENCY_KEY_HEADER = HttpIdempotency.IDEMPOTENCY_KEY_HEADER;
  /** The response header that marks a replay ({@link IdempotencyProblem#REPLAYED_HEADER}). */
  public static final String REPLAYED_HEADER = IdempotencyProblem.REPLAYED_HEADER;
  /** The exchange attribute holding the running {@link Attempt} while the application runs. */
  public static final String ATTEMPT_ATTRIBUTE =
      IdempotencyWebFilter.class.getName() + ".attempt";
  /** The scope of every key unless {@link Builder#scope} says otherwise. */
  public static final String DEFAULT_SCOPE = HttpIdempotency.DEFAULT_SCOPE;
  /** The methods protected unless {@link Builder#methods} says otherwise. */
  public static final List<String> DEFAULT_METHODS = HttpIdempotency.DEFAULT_METHODS;
  /** The response headers stored and replayed unless {@link Builder#replayHeaders} says otherwise. */
  public static final List<String> DEFAULT_REPLAY_HEADERS =
      HttpIdempotency.DEFAULT_REPLAY_HEADERS;
  /** Headers never stored nor replayed, whatever the configuration. */
  public static final List<String> ALWAYS_EXCLUDED_HEADERS =
      HttpIdempotency.ALWAYS_EXCLUDED_HEADERS;
  /** The default bound on a request body read for its fingerprint: 1 MiB. */
  public static final int DEFAULT_MAX_REQUEST_BYTES = HttpIdempotency.DEFAULT_MAX_REQUEST_BYTES;
  /** The default wait a 409 asks for before a retry. */
  public static final Duration DEFAULT_RETRY_AFTER = HttpIdempotency.DEFAULT_RETRY_AFTER;

  private static final System.Logger LOG =
      System.getLogger(IdempotencyWebFilter.class.getName());
  /** A store outage fails every request alike: one stack trace, then a count per minute. */
  private static final RepeatedFailureLog OUTAGES = RepeatedFailureLog.of(LOG);
  private static final String HANDLED_ATTRIBUTE =
      IdempotencyWebFilter.class.getName() + ".handled";

  /** The settings, as built; the fields below are derived from them once. */
  private final Config config;
  private final Once once;
  private final Set<String> methods;
  private final PathPatterns paths;
  private final PathPatterns excludedPaths;
  private final String scope;
  private final TenantResolver tenantResolver;
  private final String keyHeader;
  private final boolean keyRequired;
  private final List<String> replayHeaders;
  private final Set<String> neverStored;
  private final boolean storeServerErrors;
  private final int maxRequestBytes;
  private final int maxResponseBytes;
  private final Duration retryAfter;

  private IdempotencyWebFilter(Config config) {
    this.config = config;
    this.once = withReleasableClaims(config.once);
    this.methods = Set.copyOf(config.methods);
    this.paths = PathPatterns.of(config.paths);
    this.excludedPaths = PathPatterns.of(config.excludedPaths);
    this.scope = config.scope;
    this.tenantResolver = config.tenantResolver;
    this.keyHeader = config.keyHeader;
    this.keyRequired = config.keyRequired;
    this.replayHeaders = config.replayHeaders;
    this.neverStored = config.neverStored();
    this.storeServerErrors = config.storeServerErrors;
    this.maxRequestBytes = config.maxRequestBytes;
    this.maxResponseBytes = config.maxResponseBytes();
    this.retryAfter = config.retryAfter;
  }

  /**
   * {@code once} with the same settings, except that the filter's own release signal is never
   * terminal whatever the failure policy says: the application's errors are judged by the
   * policy, the responses the filter decides not to store always stay retryable.
   */
  private static Once withReleasableClaims(Once once) {
    FailurePolicy policy = once.config().failurePolicy();
    return once.toBuilder()
        .failurePolicy(FailurePolicy.retryAll()
            .terminalIf(e -> !(e instanceof ResponseNotStored) && policy.isTerminal(e)))
        .build();
  }

  /** A builder for a filter running requests through {@code once} (any store, lease mode). */
  public static Builder builder(Once once) {
    return new Builder(new Config(Objects.requireNonNull(once, "once")));
  }

  /**
   * A builder holding every setting of this filter, to build a variant of it (another scope,
   * other paths) with every other setting carried over.
   */
  public Builder toBuilder() {
    return new Builder(config);
  }

  /** The settings this filter was built with. */
  public Config config() {
    return config;
  }

  /**
   * The attempt running for this exchange, while the application handles a protected request;
   * empty elsewhere. Its {@link Attempt#key()} is a stable key for downstream calls.
   */
  public static Optional<Attempt> attempt(ServerWebExchange exchange) {
    Object attempt = exchange.getAttribute(ATTEMPT_ATTRIBUTE);
    return attempt instanceof Attempt a ? Optional.of(a) : Optional.empty();
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    if (exchange.getAttribute(HANDLED_ATTRIBUTE) != null || !protects(request)) {
      return chain.filter(exchange);
    }
    exchange.getAttributes().put(HANDLED_ATTRIBUTE, Boolean.TRUE);

    KeyHeader.Parsed parsed = KeyHeader.parse(request.getHeaders().get(keyHeader), keyHeader);
    if (parsed.missing()) {
      return keyRequired
          ? Problems.send(exchange, IdempotencyProblem.KEY_MISSING,
              HttpIdempotency.keyMissingDetail(request.getMethod().name(), path(request),
                  keyHeader))
          : chain.filter(exchange);
    }
    if (!parsed.valid()) {
      return Problems.send(exchange, IdempotencyProblem.KEY_INVALID, parsed.problem());
    }
    return tenantResolver.resolve(exchange)
        .map(Optional::of)
        .defaultIfEmpty(Optional.empty())
        .flatMap(identity -> identity.isEmpty()
            ? Problems.send(exchange, IdempotencyProblem.TENANT_UNKNOWN,
                HttpIdempotency.tenantUnknownDetail(keyHeader))
            : CachedBody.read(exchange, maxRequestBytes)
                .map(Optional::of)
                .defaultIfEmpty(Optional.empty())
                .flatMap(body -> body.isEmpty()
                    ? Problems.send(exchange, IdempotencyProblem.REQUEST_TOO_LARGE,
                        HttpIdempotency.requestTooLargeDetail(keyHeader, maxRequestBytes))
                    : claim(exchange, chain, parsed.key(), identity.get(), body.get())));
  }

  private Mono<Void> claim(ServerWebExchange exchange, WebFilterChain chain, String rawKey,
      String identity, byte[] body) {
    ServerHttpRequest request = exchange.getRequest();
    IdempotencyKey key;
    try {
      key = new IdempotencyKey(scope, Tenants.normalize(identity), rawKey);
    } catch (InvalidKeyException e) {
      return Problems.send(exchange, IdempotencyProblem.KEY_INVALID, e.getMessage());
    }
    Fingerprint fingerprint = RequestFingerprint.of(request.getMethod().name(), path(request),
        request.getURI().getRawQuery(), request.getHeaders().getFirst(HttpHeaders.CONTENT_TYPE),
        body);
    return handle(exchange, CachedBody.exchange(exchange, body), chain, key, fingerprint);
  }

  /** What one protected request went through, read once the claim's future completes. */
  private static final class Run {
    /** Set once the application runs. */
    volatile CapturingResponse capture;
    /** Set once the application's chain completed without an error. */
    volatile boolean returned;
    /** An error out of the application's chain after it answered (a later filter, a codec). */
    volatile Throwable lateError;
    /** Set when the key was completed with the not-stored marker for {@link #lateError}. */
    volatile boolean settledWithoutResponse;
  }


  private Mono<Void> handle(ServerWebExchange exchange, ServerWebExchange withBody,
      WebFilterChain chain, IdempotencyKey key, Fingerprint fingerprint) {
    // The chain is subscribed apart from this subscription (below), so it gets this one's Reactor
    // Context by hand: what filters before this one wrote there (Spring Security's context,
    // observations) reaches the application.
    return Mono.deferContextual(context -> {
      Run run = new Run();
      CompletableFuture<Result<StoredResponse>> claimed = once.callAsync(key, fingerprint,
          StoredResponseCodec.INSTANCE, attempt -> {
            CapturingResponse capture = new CapturingResponse(exchange.getResponse(),
                maxResponseBytes);
            run.capture = capture;
            ServerWebExchange app = withBody.mutate().response(capture).build();
            app.getAttributes().put(ATTEMPT_ATTRIBUTE, attempt);
            // Subscribed here, apart from the client's connection: a client that leaves while
            // the application runs cancels neither the application nor storing its outcome.
            return Mono.defer(() -> chain.filter(app))
                .onErrorResume(error -> {
                  if (!capture.answered()) {
                    return Mono.error(error); // before the answer: a failure of the work
                  }
                  run.lateError = error; // after it: the work ran, never run it again
                  return Mono.empty();
                })
                .then(Mono.fromCallable(() -> {
                  Throwable late = run.lateError;
                  if (late != null && !capture.complete()) {
                    LOG.log(System.Logger.Level.WARNING, () -> "the application's answer to "
                        + describe(exchange, key) + " failed part-way (" + late + "); the key"
                        + " is completed with its status and headers, without the body;"
                        + " retries get " + IdempotencyProblem.RESPONSE_NOT_STORED.type());
                    run.settledWithoutResponse = true;
                    // As the over-the-bound answer: settled, never run again (whatever status).
                    return new StoredResponse(capture.status(),
                        storedHeaders(capture.getHeaders()), new byte[0], false);
                  }
                  if (late != null) {
                    LOG.log(System.Logger.Level.WARNING, () -> "an error followed the"
                        + " application's complete answer to " + describe(exchange, key)
                        + " (" + late + "); the answer is stored and sent", late);
                  }
                  run.returned = true;
                  return stored(attempt, exchange.getRequest(), capture);
                }))
                .doFinally(signal -> app.getAttributes().remove(ATTEMPT_ATTRIBUTE))
                .contextWrite(context)
                .toFuture();
          });
      // suppressCancel: the client leaving must not cancel the call, whose outcome is stored.
      return Mono.fromFuture(claimed, true)
          .flatMap(result -> result.replayed()
              ? replay(exchange, result.value(), key)
              : run.settledWithoutResponse ? Mono.<Void>error(run.lateError)
              : sendHeld(run.capture, exchange, key))
          // the error after a cut-short answer: the error handlers answer it (a 500)
          .onErrorResume(error -> error == run.lateError && run.settledWithoutResponse
              ? Mono.error(error) : failed(exchange, key, run, unwrap(error)));
    });
  }

  private Mono<Void> failed(ServerWebExchange exchange, IdempotencyKey key, Run run,
      Throwable error) {
    CapturingResponse capture = run.capture;
    if (error instanceof ResponseNotStored e) {
      LOG.log(e.level(), () -> "response to " + describe(exchange, key) + " not stored: "
          + e.getMessage() + "; the key may be retried");
      return sendHeld(capture, exchange, key);
    }
    if (error instanceof KeyReusedException) {
      return Problems.send(exchange, IdempotencyProblem.KEY_REUSED,
          HttpIdempotency.keyReusedDetail(keyHeader));
    }
    if (error instanceof RequestInProgressException e) {
      long seconds = HttpIdempotency.retryAfterSeconds(e.retryAfter(), retryAfter);
      return Problems.send(exchange, IdempotencyProblem.IN_PROGRESS,
          IdempotencyProblem.IN_PROGRESS.status(),
          HttpIdempotency.inProgressDetail(keyHeader, seconds), seconds);
    }
    if (error instanceof ReplayedFailureException) {
      return Problems.send(exchange, IdempotencyProblem.ORIGINAL_FAILED,
          HttpIdempotency.originalFailedDetail(keyHeader));
    }
    if (error instanceof OutcomeNotStoredException) {
      // The stored form did not fit even without its body (a huge header); the request ran.
      return Problems.send(exchange, IdempotencyProblem.RESPONSE_NOT_STORED,
          HttpIdempotency.notStoredDetail(keyHeader, maxResponseBytes));
    }
    if (error instanceof LeaseLostException || error instanceof PayloadTooLargeException
        || error instanceof StoreUnavailableException) {
      if (capture == null) {
        if (error instanceof StoreUnavailableException) {
          OUTAGES.log(System.Logger.Level.WARNING, "idempotency store unavailable",
              (RuntimeException) error);
          return Problems.send(exchange, IdempotencyProblem.STORE_UNAVAILABLE,
              HttpIdempotency.storeUnavailableDetail());
        }
        return Mono.error(error);
      }
      if (!run.returned) {
        return Mono.error(error); // the application's own failure, as it raised it
      }
      // The application ran and answered, but its outcome could not be stored: another worker
      // took over (its record stands) or the store failed. This client still gets its answer.
      LOG.log(System.Logger.Level.WARNING, () -> "response to " + describe(exchange, key)
          + " sent but not stored: " + error.getMessage());
      if (error instanceof StoreUnavailableException) {
        LOG.log(System.Logger.Level.DEBUG, "the store's failure", error);
      }
      return sendHeld(capture, exchange, key);
    }
    if (capture == null && error instanceof RejectedExecutionException) {
      // The Once's asyncExecutor sheds load (a bounded pool, full): nothing was claimed or run.
      OUTAGES.log(System.Logger.Level.WARNING, "the Once's asyncExecutor refused the claim",
          (RuntimeException) error);
      return Problems.send(exchange, IdempotencyProblem.STORE_UNAVAILABLE,
          HttpIdempotency.storeUnavailableDetail());
    }
    // The application failed: nothing it wrote was sent; the error handlers answer it.
    return Mono.error(error);
  }

  private static Throwable unwrap(Throwable error) {
    Throwable e = error;
    while (e instanceof CompletionException && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /**
   * Sends what the application wrote, now that its outcome is stored (or will not be). A client
   * that hung up in the meantime changes nothing stored: its retry gets the replay.
   */
  private static Mono<Void> sendHeld(CapturingResponse capture, ServerWebExchange exchange,
      IdempotencyKey key) {
    return capture.sendHeld()
        .doOnSuccess(done -> {
          if (capture.clientGone()) {
            LOG.log(System.Logger.Level.INFO, () -> "the client of " + describe(exchange, key)
                + " left while its response streamed; the outcome is stored, a retry gets the"
                + " replay");
          }
        })
        .onErrorResume(e -> {
          LOG.log(System.Logger.Level.INFO, () -> "the client of " + describe(exchange, key)
              + " left before its response was sent (" + e + "); the outcome is stored, a retry"
              + " gets the replay");
          return Mono.empty();
        });
  }

  private StoredResponse stored(Attempt attempt, ServerHttpRequest request,
      CapturingResponse capture) {
    int status = capture.status();
    if (status >= 500 && !storeServerErrors) {
      throw new ResponseNotStored("status " + status + " is retryable",
          System.Logger.Level.DEBUG);
    }
    return HttpIdempotency.storable(
        new StoredResponse(status, storedHeaders(capture.getHeaders()), capture.body()),
        capture.overflowed(), maxResponseBytes, once.config().maxPayloadBytes(), LOG,
        () -> "response to " + describe(request, attempt.idempotencyKey()));
  }

  private List<StoredResponse.Header> storedHeaders(HttpHeaders response) {
    List<StoredResponse.Header> headers = new ArrayList<>();
    for (String name : replayHeaders) {
      if (neverStored.contains(name.toLowerCase(Locale.ROOT))) {
        continue;
      }
      List<String> values = response.get(name);
      if (values != null) {
        for (String value : values) {
          headers.add(new StoredResponse.Header(name, value));
        }
      }
    }
    return headers;
  }

  private Mono<Void> replay(ServerWebExchange exchange, StoredResponse stored,
      IdempotencyKey key) {
    ServerHttpResponse response = exchange.getResponse();
    response.setStatusCode(HttpStatusCode.valueOf(stored.status()));
    HttpHeaders headers = response.getHeaders();
    for (StoredResponse.Header header : stored.headers()) {
      if (!stored.bodyStored() && header.name().equalsIgnoreCase(HttpHeaders.CONTENT_TYPE)) {
        continue; // the problem body says what it is
      }
      headers.add(header.name(), header.value());
    }
    headers.set(REPLAYED_HEADER, "true");
    if (!stored.bodyStored()) {
      return Problems.send(exchange, IdempotencyProblem.RESPONSE_NOT_STORED, stored.status(),
          HttpIdempotency.notStoredDetail(keyHeader, maxResponseBytes), 0);
    }
    byte[] body = stored.body();
    headers.setContentLength(body.length);
    Mono<Void> write = body.length == 0 ? response.setComplete()
        : response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    // A replay is read-only: a client leaving in the middle changes nothing.
    return write.onErrorResume(e -> {
      LOG.log(System.Logger.Level.DEBUG, () -> "the client of the replay of "
          + describe(exchange, key) + " left: " + e);
      return Mono.empty();
    });
  }

  private boolean protects(ServerHttpRequest request) {
    if (!methods.contains(request.getMethod().name())) {
      return false;
    }
    String path = path(request);
    return paths.matches(path) && !excludedPaths.matches(path);
  }

  /** The decoded path within the application (without its context path), as the servlet's. */
  private static String path(ServerHttpRequest request) {
    String raw = request.getPath().pathWithinApplication().value();
    String path = UriUtils.decode(raw, StandardCharsets.UTF_8);
    return path.isEmpty() ? "/" : path;
  }

  private static String describe(ServerWebExchange exchange, IdempotencyKey key) {
    return describe(exchange.getRequest(), key);
  }

  private static String describe(ServerHttpRequest request, IdempotencyKey key) {
    return request.getMethod().name() + " " + path(request) + " (key " + key + ")";
  }

  @Override
  public String toString() {
    return "IdempotencyWebFilter[methods=" + new TreeSet<>(methods) + ", paths="
        + paths.sources() + ", excludePaths=" + excludedPaths.sources() + ", scope=" + scope
        + ", keyHeader=" + keyHeader + ", keyRequired=" + keyRequired + ", replayHeaders="
        + replayHeaders + ", storeServerErrors=" + storeServerErrors + ", maxRequestBytes="
        + maxRequestBytes + ", maxResponseBytes=" + maxResponseBytes + ", retryAfter="
        + retryAfter + "]";
  }

  /**
   * The settings of one {@link IdempotencyWebFilter}, fixed at {@link Builder#build()}: the same
   * settings, defaults and meanings as the servlet filter's. Read-only (build settings with
   * {@link Builder}; derive a variant with {@link #toBuilder()}).
   */
  public static final class Config {
    // Each setting is a field here with its default, a line in the copy constructor, a getter
    // below and a setter on the Builder: nothing else (ConfigTest checks the copy).
    Once once;
    List<String> methods = DEFAULT_METHODS;
    List<String> paths = List.of("/**");
    List<String> excludedPaths = List.of();
    String scope = DEFAULT_SCOPE;
    TenantResolver tenantResolver = TenantResolver.none();
    String keyHeader = IDEMPOTENCY_KEY_HEADER;
    boolean keyRequired = true;
    List<String> replayHeaders = DEFAULT_REPLAY_HEADERS;
    List<String> extraNeverStored = List.of();
    boolean storeServerErrors;
    int maxRequestBytes = DEFAULT_MAX_REQUEST_BYTES;
    /** Null: the Once's payload bound. */
    Integer maxResponseBytes;
    Duration retryAfter = DEFAULT_RETRY_AFTER;

    private Config(Once once) {
      this.once = once;
    }

    /** A copy of every setting (all are immutable values). */
    private Config(Config c) {
      this.once = c.once;
      this.methods = c.methods;
      this.paths = c.paths;
      this.excludedPaths = c.excludedPaths;
      this.scope = c.scope;
      this.tenantResolver = c.tenantResolver;
      this.keyHeader = c.keyHeader;
      this.keyRequired = c.keyRequired;
      this.replayHeaders = c.replayHeaders;
      this.extraNeverStored = c.extraNeverStored;
      this.storeServerErrors = c.storeServerErrors;
      this.maxRequestBytes = c.maxRequestBytes;
      this.maxResponseBytes = c.maxResponseBytes;
      this.retryAfter = c.retryAfter;
    }

    /** The {@link Once} requests run through, as given to {@link #builder}. */
    public Once once() {
      return once;
    }

    /** The HTTP methods protected, upper-case. */
    public List<String> methods() {
      return methods;
    }

    /** The path patterns protected. */
    public List<String> paths() {
      return paths;
    }

    /** The path patterns left unprotected. */
    public List<String> excludedPaths() {
      return excludedPaths;
    }

    /** The scope of every key this filter claims. */
    public String scope() {
      return scope;
    }

    /** Who the caller is. */
    public TenantResolver tenantResolver() {
      return tenantResolver;
    }

    /** The request header carrying the key. */
    public String keyHeader() {
      return keyHeader;
    }

    /** Whether a protected request without a key is refused. */
    public boolean keyRequired() {
      return keyRequired;
    }

    /** The response headers stored and replayed. */
    public List<String> replayHeaders() {
      return replayHeaders;
    }

    /**
     * The headers never stored nor replayed, lower-case: {@link #ALWAYS_EXCLUDED_HEADERS} and
     * those of {@link Builder#neverStoreHeaders}.
     */
    public Set<String> neverStored() {
      Set<String> names = new LinkedHashSet<>();
      ALWAYS_EXCLUDED_HEADERS.forEach(n -> names.add(n.toLowerCase(Locale.ROOT)));
      extraNeverStored.forEach(n -> names.add(n.toLowerCase(Locale.ROOT)));
      return Set.copyOf(names);
    }

    /** Whether responses with status 500 and above are stored and replayed. */
    public boolean storeServerErrors() {
      return storeServerErrors;
    }

    /** The largest request body read and fingerprinted. */
    public int maxRequestBytes() {
      return maxRequestBytes;
    }

    /** The largest response body stored: as set, else the {@link Once}'s payload bound. */
    public int maxResponseBytes() {
      return maxResponseBytes != null ? maxResponseBytes : once.config().maxPayloadBytes();
    }

    /** How long a 409 asks the client to wait at most. */
    public Duration retryAfter() {
      return retryAfter;
    }

    @Override
    public String toString() {
      return "IdempotencyWebFilter.Config[methods=" + methods + ", paths=" + paths
          + ", excludePaths=" + excludedPaths + ", scope=" + scope + ", keyHeader=" + keyHeader
          + ", keyRequired=" + keyRequired + ", replayHeaders=" + replayHeaders
          + ", neverStoreHeaders=" + extraNeverStored + ", storeServerErrors="
          + storeServerErrors + ", maxRequestBytes=" + maxRequestBytes + ", maxResponseBytes="
          + maxResponseBytes() + ", retryAfter=" + retryAfter + "]";
    }
  }

  /**
   * Configures an {@link IdempotencyWebFilter}: the servlet filter's builder, setting for setting.
   * Every setter validates at once; defaults: methods POST and PATCH, every path, scope
   * {@value #DEFAULT_SCOPE}, one shared tenant, header {@value #IDEMPOTENCY_KEY_HEADER} required,
   * {@link #DEFAULT_REPLAY_HEADERS}, 5xx not stored, request bodies up to 1 MiB, responses up to
   * the {@link Once}'s payload bound, 409s asking for a retry after 1 s. Lease, retention, waiting
   * while in progress, the clock, the async executor and metrics are the {@link Once}'s.
   */
  public static final class Builder {
    private final Config config;

    private Builder(Config config) {
      this.config = new Config(config);
    }

    /** The HTTP methods protected (case-insensitive, stored upper-case); default POST, PATCH. */
    public Builder methods(String... methods) {
      return methods(Arrays.asList(Objects.requireNonNull(methods, "methods")));
    }

    /** As {@link #methods(String...)}. */
    public Builder methods(Collection<String> methods) {
      Objects.requireNonNull(methods, "methods");
      List<String> upper = new ArrayList<>();
      for (String method : methods) {
        Objects.requireNonNull(method, "method");
        if (method.isEmpty() || !method.chars().allMatch(HttpIdempotency::isTokenChar)) {
          throw new IllegalArgumentException("not an HTTP method: '" + method + "'");
        }
        upper.add(method.toUpperCase(Locale.ROOT));
      }
      if (upper.isEmpty()) {
        throw new IllegalArgumentException("protect at least one method");
      }
      config.methods = List.copyOf(upper);
      return this;
    }

    /**
     * The paths protected, as patterns over the path within the application: {@code /charges},
     * {@code /charges/*} ({@code *} within one segment), {@code /payments/**} ({@code **} any
     * number of segments). Default {@code /**}: every path.
     */
    public Builder paths(String... patterns) {
      return paths(Arrays.asList(Objects.requireNonNull(patterns, "patterns")));
    }

    /** As {@link #paths(String...)}. */
    public Builder paths(Collection<String> patterns) {
      List<String> copy = List.copyOf(patterns);
      if (copy.isEmpty()) {
        throw new IllegalArgumentException("protect at least one path pattern");
      }
      copy.forEach(PathPatterns::validate);
      config.paths = copy;
      return this;
    }

    /** Paths left unprotected although {@link #paths} matches them. Default none. */
    public Builder excludePaths(String... patterns) {
      return excludePaths(Arrays.asList(Objects.requireNonNull(patterns, "patterns")));
    }

    /** As {@link #excludePaths(String...)}. */
    public Builder excludePaths(Collection<String> patterns) {
      List<String> copy = List.copyOf(patterns);
      copy.forEach(PathPatterns::validate);
      config.excludedPaths = copy;
      return this;
    }

    /**
     * The scope of every key this filter claims, default {@value #DEFAULT_SCOPE}. One scope for
     * all routes means a key reused on another route is answered 422, as Stripe does; give each
     * service sharing a store its own scope (e.g. its name). 1–128 visible ASCII characters.
     */
    public Builder scope(String scope) {
      IdempotencyKey.of(Objects.requireNonNull(scope, "scope"), "probe");
      config.scope = scope;
      return this;
    }

    /** Who the caller is, so tenants never share records. Default {@link TenantResolver#none()}. */
    public Builder tenantResolver(TenantResolver resolver) {
      config.tenantResolver = Objects.requireNonNull(resolver, "resolver");
      return this;
    }

    /** The request header carrying the key, default {@value #IDEMPOTENCY_KEY_HEADER}. */
    public Builder keyHeader(String name) {
      Objects.requireNonNull(name, "name");
      HttpIdempotency.checkHeaderName(name);
      config.keyHeader = name;
      return this;
    }

    /**
     * Whether a protected request without a key is refused (400, the default) or passed to the
     * application unprotected, for a gradual rollout.
     */
    public Builder keyRequired(boolean required) {
      config.keyRequired = required;
      return this;
    }

    /**
     * The response headers stored and replayed, replacing {@link #DEFAULT_REPLAY_HEADERS}.
     * {@code Content-Length} and connection headers are refused (the replay computes them), as
     * are {@link #ALWAYS_EXCLUDED_HEADERS} and {@link #neverStoreHeaders}.
     */
    public Builder replayHeaders(String... names) {
      return replayHeaders(Arrays.asList(Objects.requireNonNull(names, "names")));
    }

    /** As {@link #replayHeaders(String...)}. */
    public Builder replayHeaders(Collection<String> names) {
      List<String> copy = new ArrayList<>();
      for (String name : List.copyOf(names)) {
        HttpIdempotency.checkReplayHeader(name);
        if (!HttpIdempotency.containsIgnoreCase(copy, name)) {
          copy.add(name);
        }
      }
      config.replayHeaders = List.copyOf(copy);
      return this;
    }

    /**
     * Further headers never stored nor replayed, in addition to
     * {@link #ALWAYS_EXCLUDED_HEADERS}; {@link #build()} refuses an allow-list naming one.
     */
    public Builder neverStoreHeaders(String... names) {
      return neverStoreHeaders(Arrays.asList(Objects.requireNonNull(names, "names")));
    }

    /** As {@link #neverStoreHeaders(String...)}. */
    public Builder neverStoreHeaders(Collection<String> names) {
      List<String> copy = List.copyOf(names);
      copy.forEach(HttpIdempotency::checkHeaderName);
      config.extraNeverStored = copy;
      return this;
    }

    /**
     * Whether responses with status 500 and above are stored and replayed, as Stripe does, rather
     * than releasing the key for a retry (the default).
     */
    public Builder storeServerErrors(boolean store) {
      config.storeServerErrors = store;
      return this;
    }

    /** The largest request body read and fingerprinted, default 1 MiB; larger ones get 413. */
    public Builder maxRequestBytes(int bytes) {
      config.maxRequestBytes = Checks.positive(bytes, "maxRequestBytes");
      return this;
    }

    /**
     * The largest response body stored, default the {@link Once}'s payload bound (which also caps
     * the stored form with its headers). Each response is held in memory up to this size until
     * its outcome is stored. A larger body streams to the client as written and is not kept: the
     * status and headers are stored, retries get them with an
     * {@link IdempotencyProblem#RESPONSE_NOT_STORED} body, and the application never runs again
     * (a warning is logged).
     */
    public Builder maxResponseBytes(int bytes) {
      config.maxResponseBytes = Checks.positive(bytes, "maxResponseBytes");
      return this;
    }

    /**
     * How long a 409 asks the client to wait ({@code Retry-After}, whole seconds, at least 1),
     * never more than the original's lease has left. Default 1 s.
     */
    public Builder retryAfter(Duration wait) {
      config.retryAfter = Checks.positive(wait, "retryAfter");
      return this;
    }

    /**
     * The filter.
     *
     * @throws IllegalArgumentException if a replayed header is also one never stored
     */
    public IdempotencyWebFilter build() {
      Set<String> never = config.neverStored();
      for (String name : config.replayHeaders) {
        if (never.contains(name.toLowerCase(Locale.ROOT))) {
          throw new IllegalArgumentException(name + " is both replayed and never stored");
        }
      }
      return new IdempotencyWebFilter(new Config(config));
    }
  }
}
