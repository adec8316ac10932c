package dev.once.jaxrs;

import dev.once.Attempt;
import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.http.HttpIdempotency;
import dev.once.http.PathPatterns;
import dev.once.support.Checks;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.Feature;
import jakarta.ws.rs.core.FeatureContext;
import jakarta.ws.rs.ext.WriterInterceptor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A Jakarta REST (JAX-RS) feature that makes unsafe HTTP requests idempotent per the IETF
 * {@code Idempotency-Key} header draft, with exactly the HTTP contract of once-servlet's
 * {@code IdempotencyFilter}: the first request with a key runs the resource once; every retry with
 * the same key and the same request gets the original response back, byte for byte, marked
 * {@code Idempotent-Replayed: true}; the same problem answers (400, 403, 409 with
 * {@code Retry-After}, 413, 422, 500, 503 with {@code Retry-After}, see
 * {@link dev.once.http.IdempotencyProblem}), the same fingerprint, tenants and stored format, so a
 * key answered by one adapter replays through the other.
 *
 * <pre>{@code
 * IdempotencyFeature idempotency = IdempotencyFeature.builder(once)  // Once over any store
 *     .paths("/payments/**")                                         // POST and PATCH by default
 *     .tenantResolver(TenantResolver.header("X-Api-Key"))
 *     .build();
 * resourceConfig.register(idempotency);                              // or Application#getSingletons
 * }</pre>
 *
 * <p>It registers a request filter (priority {@link #PRIORITY}, after authentication and
 * authorization), a response filter and a writer interceptor that hold the response entity in
 * memory until its outcome is stored, and an {@code ExceptionMapper<Throwable>} that answers as
 * the runtime's default mapper does and tells the claim that the resource threw. Each protected
 * request's {@link Once#call} runs on a thread of its own while the resource runs on the request
 * thread (Jakarta REST has no way to wrap a resource in a call): the filter blocks on the store,
 * so on a runtime serving requests on IO threads (Quarkus RESTEasy Reactive, Vert.x) run
 * protected resources on worker threads ({@code @Blocking}). Thread-safe.
 */
public final class IdempotencyFeature implements Feature {

  /** The request header that carries the key, per the IETF draft. */
  public static final String IDEMPOTENCY_KEY_HEADER = HttpIdempotency.IDEMPOTENCY_KEY_HEADER;
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
  /**
   * The request filter's priority: after authentication (1000) and authorization (2000), so the
   * principal is known; the response filter and the writer interceptor run outermost.
   */
  public static final int PRIORITY = 2500;
  /** The request property holding the running {@link Attempt} while the resource runs. */
  public static final String ATTEMPT_PROPERTY = IdempotencyFilters.ATTEMPT_PROPERTY;

  private final Config config;

  private IdempotencyFeature(Config config) {
    this.config = config;
  }

  /** A builder for a feature running requests through {@code once} (any store, lease mode). */
  public static Builder builder(Once once) {
    return new Builder(new Config(Objects.requireNonNull(once, "once")));
  }

  /** A builder over a copy of this feature's settings, to build a variant of it. */
  public Builder toBuilder() {
    return new Builder(config);
  }

  /** The settings this feature was built with. */
  public Config config() {
    return config;
  }

  /**
   * One feature for several configurations (other paths, scopes, tenants): a request is handled
   * by the first whose methods and paths protect it. Register this instead of each of them
   * (a runtime registers one instance of a class).
   */
  public static Feature of(IdempotencyFeature... features) {
    List<IdempotencyFeature> all = List.of(features);
    if (all.isEmpty()) {
      throw new IllegalArgumentException("give at least one feature");
    }
    return context -> register(context, all);
  }

  /**
   * The attempt running for this request, while the resource handles a protected request; empty
   * elsewhere. Its {@link Attempt#key()} is a stable key for downstream calls. Resources get the
   * context with {@code @Context ContainerRequestContext}.
   */
  public static Optional<Attempt> attempt(ContainerRequestContext request) {
    Object attempt = request.getProperty(ATTEMPT_PROPERTY);
    return attempt instanceof Attempt a ? Optional.of(a) : Optional.empty();
  }

  @Override
  public boolean configure(FeatureContext context) {
    return register(context, List.of(this));
  }

  private static boolean register(FeatureContext context, List<IdempotencyFeature> features) {
    List<Protection> protections = features.stream().map(f -> protection(f.config)).toList();
    context.register(new IdempotencyFilters(protections), Map.of(
        ContainerRequestFilter.class, PRIORITY,
        ContainerResponseFilter.class, 1,
        WriterInterceptor.class, 1));
    // Each with one contract: a runtime may rank a provider by one priority for all of them.
    if (!context.getConfiguration().isRegistered(IdempotencyFilters.Reset.class)) {
      context.register(new IdempotencyFilters.Reset(),
          Map.of(ContainerRequestFilter.class, -1_000_000));
    }
    if (!context.getConfiguration().isRegistered(IdempotencyFilters.Boundary.class)) {
      context.register(new IdempotencyFilters.Boundary(),
          Map.of(ContainerResponseFilter.class, 1_000_000));
    }
    if (!context.getConfiguration().isRegistered(FailureMapper.class)) {
      context.register(FailureMapper.class);
    }
    return true;
  }

  private static Protection protection(Config c) {
    return new Protection(IdempotencyFilters.withReleasableClaims(c.once), Set.copyOf(c.methods),
        PathPatterns.of(c.paths), PathPatterns.of(c.excludedPaths), c.scope, c.tenantResolver,
        c.keyHeader, c.keyRequired, c.replayHeaders, c.neverStored(), c.storeServerErrors,
        c.maxRequestBytes, c.maxResponseBytes(), c.retryAfter, c.abandonAfter);
  }

  @Override
  public String toString() {
    return "IdempotencyFeature[" + config + "]";
  }

  /** The default {@link Builder#abandonAfter}: 10 min. */
  public static final Duration DEFAULT_ABANDON_AFTER = Duration.ofMinutes(10);

  /**
   * The settings of one {@link IdempotencyFeature}, fixed at {@link Builder#build()}. Read-only: it
   * has getters and no public constructor (build settings with {@link Builder}; derive a variant
   * with {@link #toBuilder()}).
   */
  public static final class Config {
    // Each setting is a field here with its default, a line in the copy constructor, a getter
    // below and a setter on the Builder: nothing else. The builder edits a Config of its own;
    // build() and toBuilder() copy it whole .
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
    Duration abandonAfter = DEFAULT_ABANDON_AFTER;

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
      this.abandonAfter = c.abandonAfter;
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

    /** How long a protected request may take before its claim is released unanswered. */
    public Duration abandonAfter() {
      return abandonAfter;
    }

    @Override
    public String toString() {
      return "IdempotencyFeature.Config[methods=" + methods + ", paths=" + paths
          + ", excludePaths=" + excludedPaths + ", scope=" + scope + ", keyHeader=" + keyHeader
          + ", keyRequired=" + keyRequired + ", replayHeaders=" + replayHeaders
          + ", neverStoreHeaders=" + extraNeverStored + ", storeServerErrors="
          + storeServerErrors + ", maxRequestBytes=" + maxRequestBytes + ", maxResponseBytes="
          + maxResponseBytes() + ", retryAfter=" + retryAfter + "]";
    }
  }

  /**
   * Configures an {@link IdempotencyFeature}. Every setter validates at once; defaults: methods
   * POST and PATCH, every path, scope {@value #DEFAULT_SCOPE}, one shared tenant, header
   * {@value #IDEMPOTENCY_KEY_HEADER} required, {@link #DEFAULT_REPLAY_HEADERS}, 5xx not stored,
   * request bodies up to 1 MiB, responses up to the {@link Once}'s payload bound, 409s asking for
   * a retry after 1 s. Lease, retention, waiting while in progress, the clock and metrics are the
   * {@link Once}'s.
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
     * {@code idempotency-response-not-stored} body, and the application never runs again
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
     * How long the claim waits for an answer once nothing may still run (default 10 minutes): an
     * asynchronous resource ({@code @Suspended AsyncResponse}, {@code CompletionStage}) with no
     * answer by then has its claim left to its lease — never released nor failed, no longer
     * renewed. A synchronous resource is waited for as long as it runs; this then bounds only
     * the wait for its response after it returned.
     */
    public Builder abandonAfter(Duration wait) {
      config.abandonAfter = Checks.positive(wait, "abandonAfter");
      return this;
    }

    /**
     * The feature.
     *
     * @throws IllegalArgumentException if a replayed header is also one never stored
     */
    public IdempotencyFeature build() {
      Set<String> never = config.neverStored();
      for (String name : config.replayHeaders) {
        if (never.contains(name.toLowerCase(Locale.ROOT))) {
          throw new IllegalArgumentException(name + " is both replayed and never stored");
        }
      }
      return new IdempotencyFeature(new Config(config));
    }

  }
}
