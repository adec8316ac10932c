package dev.once.testkit.http;

import static dev.once.testkit.http.ContractHttp.header;
import static dev.once.testkit.http.ContractHttp.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.InProgressPolicy;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import dev.once.testkit.http.Route.Tenant;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The HTTP idempotency contract every Once HTTP adapter keeps (the servlet filter, the JAX-RS
 * filter), black-box over real HTTP on 127.0.0.1: the IETF {@code Idempotency-Key} header, replays
 * byte for byte marked {@code Idempotent-Replayed: true}, the RFC 9457 problem answers (400, 403,
 * 409 with {@code Retry-After}, 413, 422, 500, 503 with {@code Retry-After}), tenants, the response
 * held until its outcome is stored (a client that hangs up mid-answer and retries gets the replay),
 * the oversize tombstone, and the store cut before anything ran. Every test uses fresh keys, so
 * the tests share one server and one store.
 *
 * <p>An adapter's test extends it, once per store, and implements the SPI: {@link #newStore} (the
 * store under test), {@link #unreachableStore} (a store every call of which fails, as a lost
 * database), {@link #start} (a server with the adapter on each {@link Route}, before an application
 * implementing {@link ContractApp}'s routes, and an authentication that makes the {@code X-User}
 * header the principal) and {@link #loggerName} (where the adapter logs).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class HttpIdempotencyContract {

  /** The media type of every problem answer. */
  protected static final String PROBLEM_JSON = "application/problem+json";
  /** The lease of the {@code Once} most routes run on. */
  protected static final Duration LEASE = Duration.ofSeconds(30);
  /** Where problem types are documented; each type is this and a slug. */
  public static final String TYPE_BASE =
      "https://github.com/once-dev/once/blob/main/integrations/servlet/README.md#";

  /**
   * The problem answers of the contract, as the client sees them: status, {@code type} slug,
   * {@code title}, and whether they carry {@code Retry-After} and {@code Idempotent-Replayed}.
   */
  public enum Problem {
    /** No key on a protected route. */
    KEY_MISSING(400, "idempotency-key-missing", "Idempotency-Key header missing", false, false),
    /** A malformed key. */
    KEY_INVALID(400, "idempotency-key-invalid", "Idempotency-Key header invalid", false, false),
    /** The caller could not be identified. */
    TENANT_UNKNOWN(403, "idempotency-tenant-unknown", "Caller not identified", false, false),
    /** The request body is over the bound. */
    REQUEST_TOO_LARGE(413, "idempotency-request-too-large", "Request body too large", false,
        false),
    /** The key was used for another request. */
    KEY_REUSED(422, "idempotency-key-reused", "Idempotency-Key reused for another request",
        false, false),
    /** The original still runs. */
    IN_PROGRESS(409, "idempotency-request-in-progress", "Original request still in progress",
        true, false),
    /** The original failed terminally. */
    ORIGINAL_FAILED(500, "idempotency-original-failed", "Original request failed", false, true),
    /** The store is down, nothing ran. */
    STORE_UNAVAILABLE(503, "idempotency-store-unavailable", "Idempotency store unavailable", true,
        false),
    /** The original ran, its body was too large to store (status: the original's). */
    RESPONSE_NOT_STORED(200, "idempotency-response-not-stored", "Original response not stored",
        false, true);

    private final int status;
    private final String slug;
    private final String title;
    private final boolean retryAfter;
    private final boolean replayed;

    Problem(int status, String slug, String title, boolean retryAfter, boolean replayed) {
      this.status = status;
      this.slug = slug;
      this.title = title;
      this.retryAfter = retryAfter;
      this.replayed = replayed;
    }

    /** The status answered. */
    public int status() {
      return status;
    }

    /** The {@code type} URI. */
    public String type() {
      return TYPE_BASE + slug;
    }

    /** The {@code title}. */
    public String title() {
      return title;
    }

    /** Whether it carries {@code Retry-After}. */
    public boolean retryAfter() {
      return retryAfter;
    }

    /** Whether it carries {@code Idempotent-Replayed: true}. */
    public boolean replayed() {
      return replayed;
    }
  }

  /** The clock of every {@code Once} of the server. */
  protected final ManualClock clock = new ManualClock();
  /** The application's state. */
  protected final ContractApp app = new ContractApp();
  final CountDownLatch waitingClaims = new CountDownLatch(3);
  Path dir;
  /** The store under test. */
  protected IdempotencyStore store;
  /** The {@code Once} of most routes. */
  protected Once once;
  ContractServer server;
  /** The client. */
  protected ContractHttp http;

  /** The store under test, in {@code dir} if it needs files. */
  protected abstract IdempotencyStore newStore(Path dir) throws Exception;

  /**
   * A real store every call of which fails, as a lost database does (e.g. a JDBC store whose
   * table was never created), in {@code dir} if it needs files.
   */
  protected abstract IdempotencyStore unreachableStore(Path dir) throws Exception;

  /**
   * Starts a server on 127.0.0.1 and a free port: an authentication that makes the {@code X-User}
   * header the principal, then the adapter on each route (in order; a request matching none
   * passes unprotected), then the application implementing {@code app}'s routes.
   */
  protected abstract ContractServer start(Map<String, Route> routes, ContractApp app)
      throws Exception;

  /** The {@code java.util.logging} logger the adapter logs to (System.Logger's default). */
  protected abstract String loggerName();

  @BeforeAll
  void startServer() throws Exception {
    dir = Files.createTempDirectory("once-http-contract");
    store = newStore(dir);
    once = Once.builder(store).lease(LEASE).clock(clock).build();
    Once terminal = Once.builder(store).clock(clock)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalStateException.class)).build();
    Once waiting = Once.builder(store).clock(clock)
        .onInProgress(InProgressPolicy.waitUpTo(Duration.ofSeconds(20)))
        .listener(new OnceListener() {
          @Override
          public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
            if (operation.equals("claim")) {
              waitingClaims.countDown();
            }
          }
        }).build();
    Once down = Once.builder(unreachableStore(dir)).clock(clock).build();

    Map<String, Route> routes = new LinkedHashMap<>();
    routes.put("api", Route.of("/api/**", once).excluding("/api/open/**")
        .tenant(Tenant.PRINCIPAL).maxRequestBytes(64 * 1024));
    routes.put("keys", Route.of("/keys/**", once).scope("keys").tenant(Tenant.API_KEY));
    routes.put("stripe", Route.of("/stripe/**", once).storingServerErrors());
    routes.put("small", Route.of("/small/**", once).maxResponseBytes(1000));
    routes.put("optional", Route.of("/optional/**", once).keyOptional());
    routes.put("terminal", Route.of("/terminal/**", terminal));
    routes.put("wait", Route.of("/wait/**", waiting));
    routes.put("down", Route.of("/down/**", down));
    server = start(routes, app);
    http = new ContractHttp(server);
  }

  @AfterAll
  void stopServer() throws Exception {
    if (server != null) {
      server.close();
    }
    if (store != null) {
      store.close();
    }
  }

  /**
   * The tenant an {@code X-Api-Key} value is stored under: {@code ~} and the base64url SHA-256 of
   * the value's digest form ({@code ~} and its base64url SHA-256), never the secret.
   */
  static String apiKeyTenant(String value) {
    return digest(digest(value));
  }

  private static String digest(String value) {
    try {
      byte[] hash = MessageDigest.getInstance("SHA-256")
          .digest(value.getBytes(StandardCharsets.UTF_8));
      return "~" + Base64.getUrlEncoder().withoutPadding().encodeToString(hash);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Collects what the adapter logs. */
  final class CapturedLog extends Handler implements AutoCloseable {
    private final Logger logger = Logger.getLogger(loggerName());
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();

    CapturedLog() {
      logger.addHandler(this);
    }

    List<String> warnings() {
      return records.stream().filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue())
          .map(LogRecord::getMessage).toList();
    }

    @Override
    public void publish(LogRecord record) {
      records.add(record);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {
      logger.removeHandler(this);
    }
  }

  static String newKey() {
    return "k-" + UUID.randomUUID();
  }

  static void assertProblem(HttpResponse<byte[]> response, Problem problem) {
    assertThat(response.statusCode()).as(text(response)).isEqualTo(problem.status());
    assertThat(header(response, "Content-Type")).startsWith(PROBLEM_JSON);
    assertThat(text(response)).contains("\"type\":\"" + problem.type() + "\"")
        .contains("\"status\":" + problem.status()).contains("\"title\":\"" + problem.title())
        // The request's path, as Spring answers a ProblemDetail (issue 24: one vocabulary).
        .contains("\"instance\":\"" + response.uri().getRawPath() + "\"");
    // The headers the one vocabulary gives each problem.
    assertThat(response.headers().firstValue("Retry-After").isPresent())
        .as("Retry-After").isEqualTo(problem.retryAfter());
    if (problem.replayed()) {
      assertThat(header(response, "Idempotent-Replayed")).isEqualTo("true");
    }
  }

  Optional<IdempotencyRecord> record(String scope, String tenant, String key) {
    return store.find(IdempotencyKey.of(scope, tenant, key));
  }

  // --- first request, replay -------------------------------------------------------------

  @Test
  void retryReplaysTheOriginalResponseByteForByte() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/charges", "alice", key, "{\"amount\":1000}");
    HttpResponse<byte[]> retry = http.post("/api/charges", "alice", key, "{\"amount\":1000}");

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(header(first, "Idempotent-Replayed")).isNull();
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(header(retry, "Content-Type")).isEqualTo(header(first, "Content-Type"));
    assertThat(header(retry, "Location")).isEqualTo(header(first, "Location")).isNotNull();
    assertThat(header(retry, "Content-Length")).isEqualTo(Integer.toString(first.body().length));
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void setCookieAndUnlistedHeadersAreNeverReplayed() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/charges", "alice", key, "{}");
    HttpResponse<byte[]> retry = http.post("/api/charges", "alice", key, "{}");

    assertThat(first.headers().allValues("Set-Cookie")).isNotEmpty();
    assertThat(header(first, "X-Execution")).isEqualTo("1");
    assertThat(retry.headers().allValues("Set-Cookie")).isEmpty();
    assertThat(header(retry, "X-Execution")).isNull();
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
  }

  @Test
  void jsonKeyOrderAndWhitespaceDoNotMatter() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/charges", "alice", key,
        "{\"amount\":1000,\"currency\":\"eur\"}");
    HttpResponse<byte[]> retry = http.post("/api/charges", "alice", key,
        "{ \"currency\" : \"eur\",\n  \"amount\" : 1000 }");

    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void quotedAndBareFormsOfAKeyAreTheSameKey() {
    String key = newKey();
    HttpResponse<byte[]> quoted = http.post("/api/charges", "alice", "\"" + key + "\"", "{}");
    HttpResponse<byte[]> bare = http.post("/api/charges", "alice", key, "{}");

    assertThat(quoted.statusCode()).isEqualTo(201);
    assertThat(header(bare, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(bare.body()).isEqualTo(quoted.body());
    assertThat(record("http", "alice", key)).isPresent();
  }

  @Test
  void aClientErrorIsStoredAndReplayed() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/status/409", "alice", key, "{}");
    HttpResponse<byte[]> retry = http.post("/api/status/409", "alice", key, "{}");

    assertThat(first.statusCode()).isEqualTo(409);
    assertThat(retry.statusCode()).isEqualTo(409);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void aWriterResponseIsReplayedInItsCharset() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/writer", "alice", key, "{}");
    HttpResponse<byte[]> retry = http.post("/api/writer", "alice", key, "{}");

    assertThat(text(first)).startsWith("héllo ✓ #").endsWith(" and more");
    assertThat(header(first, "Content-Type")).containsIgnoringCase("charset=utf-8");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(header(retry, "Content-Type")).isEqualTo(header(first, "Content-Type"));
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
  }

  @Test
  void formParametersReachTheApplicationAndTheReplayMatches() {
    String key = newKey();
    HttpRequest request = http.post("/api/form?q=query", "alice", key, "a=%C3%A9t%C3%A9&b=1&b=2",
        "application/x-www-form-urlencoded; charset=UTF-8");
    HttpResponse<byte[]> first = http.send(request);
    HttpResponse<byte[]> retry = http.send(request);

    assertThat(text(first)).startsWith("a=été b=[1, 2] q=query #");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
  }

  @Test
  void theApplicationReadsTheBodyTheFilterAlreadyRead() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/reader", "alice", key, "{\"amount\":\"é\"}");

    assertThat(text(first)).startsWith("read {\"amount\":\"é\"} #");
  }

  @Test
  void aRedirectIsStoredWithItsLocation() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/redirect", "alice", key, "{}");
    HttpResponse<byte[]> retry = http.post("/api/redirect", "alice", key, "{}");

    assertThat(first.statusCode()).isEqualTo(303);
    assertThat(retry.statusCode()).isEqualTo(303);
    assertThat(header(retry, "Location")).isEqualTo(header(first, "Location"))
        .contains("/api/elsewhere/");
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void theApplicationSeesTheAttemptsDownstreamKey() {
    String key = newKey();
    HttpResponse<byte[]> response = http.post("/api/attempt", "alice", key, "{}");

    assertThat(text(response))
        .isEqualTo(IdempotencyKey.of("http", "alice", key).downstreamKey());
  }

  // --- concurrency --------------------------------------------------------------------------

  @Test
  void twoRacingIdenticalRequestsExecuteOnce() throws Exception {
    String key = newKey();
    ContractApp.Gate gate = app.gate(key);
    CompletableFuture<HttpResponse<byte[]>> first =
        http.sendAsync(http.post("/api/slow", "alice", key, "{}", "application/json"));
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();

    HttpResponse<byte[]> second = http.post("/api/slow", "alice", key, "{}");
    assertProblem(second, Problem.IN_PROGRESS);
    assertThat(header(second, "Retry-After")).isEqualTo("1");

    gate.release.countDown();
    assertThat(first.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    HttpResponse<byte[]> third = http.post("/api/slow", "alice", key, "{}");
    assertThat(third.body()).isEqualTo(first.get().body());
    assertThat(header(third, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void manyClientsRacingOnOneKeyExecuteItOnce() throws Exception {
    String key = newKey();
    ContractApp.Gate gate = app.gate(key);
    int clients = 8;
    CountDownLatch start = new CountDownLatch(1);
    CountDownLatch answered = new CountDownLatch(clients - 1);
    List<CompletableFuture<HttpResponse<byte[]>>> responses = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      CompletableFuture<HttpResponse<byte[]>> response = new CompletableFuture<>();
      responses.add(response);
      Thread thread = new Thread(() -> {
        try {
          start.await();
          response.complete(http.post("/api/slow", "alice", key, "{\"n\":1}"));
          answered.countDown();
        } catch (Throwable t) {
          response.completeExceptionally(t);
        }
      });
      threads.add(thread);
      thread.start();
    }
    start.countDown();
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
    // Every client but the one held inside the handler is answered while it is held.
    assertThat(answered.await(20, TimeUnit.SECONDS)).isTrue();
    gate.release.countDown();
    for (Thread thread : threads) {
      thread.join(20_000);
    }

    List<Integer> statuses = responses.stream().map(f -> f.join().statusCode()).toList();
    assertThat(statuses).containsOnlyOnce(200);
    assertThat(statuses.stream().filter(s -> s == 409).count()).isEqualTo(clients - 1);
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void aDuplicateWaitsForTheOriginalWhenTheOnceWaits() throws Exception {
    String key = newKey();
    ContractApp.Gate gate = app.gate(key);
    CompletableFuture<HttpResponse<byte[]>> first =
        http.sendAsync(http.post("/wait/slow", null, key, "{}", "application/json"));
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<HttpResponse<byte[]>> second =
        http.sendAsync(http.post("/wait/slow", null, key, "{}", "application/json"));
    // The first request's claim, the second's, then the second polling: it is waiting.
    assertThat(waitingClaims.await(20, TimeUnit.SECONDS)).isTrue();
    assertThat(second).isNotDone();

    gate.release.countDown();
    HttpResponse<byte[]> replay = second.get(20, TimeUnit.SECONDS);
    assertThat(replay.statusCode()).isEqualTo(200);
    assertThat(header(replay, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(replay.body()).isEqualTo(first.get().body());
    assertThat(app.executions("null", key)).isEqualTo(1);
  }

  // --- refusals -----------------------------------------------------------------------------

  @Test
  void aMissingKeyIsRefusedAndNothingRuns() {
    int before = app.total();
    HttpResponse<byte[]> response = http.post("/api/charges", "alice", null, "{}");

    assertProblem(response, Problem.KEY_MISSING);
    assertThat(app.total()).isEqualTo(before);
  }

  @Test
  void malformedKeysAreRefused() {
    String tooLong = "k".repeat(256);
    for (String bad : List.of("\"\"", "\"   \"", tooLong, "\"" + tooLong + "\"", "\"abc",
        "\"abc\";p=1", "a b", "a\"b", "\"a\\nb\"")) {
      HttpResponse<byte[]> response = http.post("/api/charges", "alice", bad, "{}");
      assertProblem(response, Problem.KEY_INVALID);
    }
    assertThat(http.post("/api/charges", "alice", "k".repeat(255), "{}").statusCode())
        .isEqualTo(201);
  }

  @Test
  void aKeySentTwiceIsRefused() {
    HttpResponse<byte[]> response = http.send(http.request("/api/charges")
        .header("X-User", "alice").header("Content-Type", "application/json")
        .header("Idempotency-Key", newKey()).header("Idempotency-Key", newKey())
        .POST(HttpRequest.BodyPublishers.ofString("{}")).build());

    assertProblem(response, Problem.KEY_INVALID);
  }

  @Test
  void keysWithBytesNoClientLibrarySendsAreRefused() throws Exception {
    int before = app.total();
    assertThat(http.raw("POST /api/charges HTTP/1.1\r\nX-User: alice\r\nIdempotency-Key: caf\u00e9"))
        .isEqualTo(400);
    assertThat(http.raw("POST /api/charges HTTP/1.1\r\nX-User: alice\r\nIdempotency-Key: a\tb"))
        .isEqualTo(400);
    assertThat(http.raw("POST /api/charges HTTP/1.1\r\nX-User: alice\r\nIdempotency-Key: \"a\tb\""))
        .isEqualTo(400);
    assertThat(app.total()).isEqualTo(before);
  }

  @Test
  void aKeyReusedForAnotherRequestIsRefusedInEveryState() throws Exception {
    String key = newKey();
    // While the original is in progress.
    ContractApp.Gate gate = app.gate(key);
    CompletableFuture<HttpResponse<byte[]>> first =
        http.sendAsync(http.post("/api/slow", "alice", key, "{\"a\":1}", "application/json"));
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
    assertProblem(http.post("/api/slow", "alice", key, "{\"a\":2}"),
        Problem.KEY_REUSED);
    gate.release.countDown();
    assertThat(first.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);

    // After it completed: another body, path, query or method target.
    assertProblem(http.post("/api/slow", "alice", key, "{\"a\":2}"),
        Problem.KEY_REUSED);
    assertProblem(http.post("/api/charges", "alice", key, "{\"a\":1}"),
        Problem.KEY_REUSED);
    assertProblem(http.post("/api/slow?x=1", "alice", key, "{\"a\":1}"),
        Problem.KEY_REUSED);
    HttpResponse<byte[]> patch = http.send(http.request("/api/slow").header("X-User", "alice")
        .header("Idempotency-Key", key).header("Content-Type", "application/json")
        .method("PATCH", HttpRequest.BodyPublishers.ofString("{\"a\":1}")).build());
    assertProblem(patch, Problem.KEY_REUSED);
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void aKeyReusedAfterAFailureIsRefused() {
    String key = newKey();
    assertThat(http.post("/api/boom", "alice", key, "{}").statusCode()).isEqualTo(500);
    assertThat(record("http", "alice", key)).map(IdempotencyRecord::status)
        .contains(Status.FAILED);

    assertProblem(http.post("/api/boom", "alice", key, "{\"other\":true}"),
        Problem.KEY_REUSED);
  }

  @Test
  void anOversizedRequestBodyIsRefused() {
    int before = app.total();
    HttpResponse<byte[]> response = http.post("/api/charges", "alice", newKey(),
        "{\"pad\":\"" + "x".repeat(70 * 1024) + "\"}");

    assertProblem(response, Problem.REQUEST_TOO_LARGE);
    assertThat(app.total()).isEqualTo(before);
  }

  @Test
  void aStoreFailureBeforeTheApplicationRanIsA503() {
    String key = newKey();
    HttpResponse<byte[]> response = http.post("/down/charges", null, key, "{}");

    assertProblem(response, Problem.STORE_UNAVAILABLE);
    assertThat(header(response, "Retry-After")).isEqualTo("1");
    assertThat(app.executions("null", key)).isZero();
  }

  // --- tenants ------------------------------------------------------------------------------

  @Test
  void oneTenantsKeyNeverReplaysAnothersResponse() {
    String key = newKey();
    HttpResponse<byte[]> alice = http.post("/api/charges", "alice", key, "{\"amount\":1}");
    HttpResponse<byte[]> bob = http.post("/api/charges", "bob", key, "{\"amount\":1}");
    HttpResponse<byte[]> aliceAgain = http.post("/api/charges", "alice", key, "{\"amount\":1}");

    assertThat(alice.statusCode()).isEqualTo(201);
    assertThat(bob.statusCode()).isEqualTo(201);
    assertThat(header(bob, "Idempotent-Replayed")).isNull();
    assertThat(bob.body()).isNotEqualTo(alice.body());
    assertThat(aliceAgain.body()).isEqualTo(alice.body());
    assertThat(app.executions("alice", key)).isEqualTo(1);
    assertThat(app.executions("bob", key)).isEqualTo(1);
    // Even another body under the same key is no misuse across tenants.
    assertThat(http.post("/api/charges", "carol", key, "{\"amount\":2}").statusCode())
        .isEqualTo(201);
  }

  @Test
  void anUnidentifiedCallerIsRefused() {
    HttpResponse<byte[]> response = http.post("/api/charges", null, newKey(), "{}");

    assertProblem(response, Problem.TENANT_UNKNOWN);
  }

  @Test
  void apiKeyTenantsAreSeparateAndTheSecretIsNeverStored() {
    String key = newKey();
    HttpRequest.Builder base = http.request("/keys/charges").header("Idempotency-Key", key)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{}"));
    HttpResponse<byte[]> one = http.send(base.copy().header("X-Api-Key", "sk_one").build());
    HttpResponse<byte[]> two = http.send(base.copy().header("X-Api-Key", "sk_two").build());
    HttpResponse<byte[]> oneAgain = http.send(base.copy().header("X-Api-Key", "sk_one").build());

    assertThat(two.body()).isNotEqualTo(one.body());
    assertThat(oneAgain.body()).isEqualTo(one.body());
    assertThat(header(oneAgain, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(record("keys", "sk_one", key)).isEmpty();
    assertThat(record("keys", apiKeyTenant("sk_one"), key)).isPresent();
    assertProblem(http.send(base.copy().build()), Problem.TENANT_UNKNOWN);
  }

  // --- failures and retries -----------------------------------------------------------------

  @Test
  void aCrashedHandlersKeyCanBeRetriedAtOnce() {
    String key = newKey();
    HttpResponse<byte[]> crashed = http.post("/api/boom", "alice", key, "{}");
    assertThat(crashed.statusCode()).isEqualTo(500);
    assertThat(record("http", "alice", key)).map(IdempotencyRecord::status)
        .contains(Status.FAILED);

    HttpResponse<byte[]> retry = http.post("/api/boom", "alice", key, "{}");
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(text(retry)).startsWith("recovered");
    assertThat(header(retry, "Idempotent-Replayed")).isNull();
    assertThat(app.executions("alice", key)).isEqualTo(2);
    assertThat(header(http.post("/api/boom", "alice", key, "{}"), "Idempotent-Replayed"))
        .isEqualTo("true");
  }

  @Test
  void aStalledHandlersKeyIsTakenOverAfterTheLeaseAndTheStalledOneIsFenced() throws Exception {
    String key = newKey();
    ContractApp.Gate gate = app.gate(key);
    try (CapturedLog log = new CapturedLog()) {
      CompletableFuture<HttpResponse<byte[]>> stalled =
          http.sendAsync(http.post("/api/slow", "alice", key, "{}", "application/json"));
      assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
      assertProblem(http.post("/api/slow", "alice", key, "{}"), Problem.IN_PROGRESS);

      clock.advance(LEASE.plusSeconds(1));
      HttpResponse<byte[]> takeover = http.post("/api/slow", "alice", key, "{}");
      assertThat(takeover.statusCode()).isEqualTo(200);
      assertThat(header(takeover, "Idempotent-Replayed")).isNull();
      assertThat(app.executions("alice", key)).isEqualTo(2);

      // The stalled worker wakes: its client gets its response, but it cannot overwrite the record.
      gate.release.countDown();
      HttpResponse<byte[]> late = stalled.get(20, TimeUnit.SECONDS);
      assertThat(late.statusCode()).isEqualTo(200);
      HttpResponse<byte[]> replay = http.post("/api/slow", "alice", key, "{}");
      assertThat(replay.body()).isEqualTo(takeover.body()).isNotEqualTo(late.body());
      assertThat(log.warnings()).anyMatch(m -> m.contains("sent but not stored"));
    }
  }

  @Test
  void aRetriedHandlerDoesNotRepeatItsDurableSteps() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/api/stepped", "alice", key, "{}");
    HttpResponse<byte[]> retry = http.post("/api/stepped", "alice", key, "{}");

    assertThat(first.statusCode()).isEqualTo(503);
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(text(retry)).isEqualTo("mail #1");
    assertThat(app.executions("alice", key)).isEqualTo(2);
    assertThat(app.mails(key)).isEqualTo(1);
  }

  @Test
  void aServerErrorIsNotStoredByDefault() {
    String key = newKey();
    assertThat(http.post("/api/status/503", "alice", key, "{}").statusCode()).isEqualTo(503);
    assertThat(record("http", "alice", key)).map(IdempotencyRecord::status)
        .contains(Status.FAILED);
    HttpResponse<byte[]> retry = http.post("/api/status/503", "alice", key, "{}");

    assertThat(retry.statusCode()).isEqualTo(503);
    assertThat(header(retry, "Idempotent-Replayed")).isNull();
    assertThat(app.executions("alice", key)).isEqualTo(2);
  }

  @Test
  void aServerErrorIsReplayedWhenConfiguredToBeStored() {
    String key = newKey();
    HttpResponse<byte[]> first = http.post("/stripe/status/500", null, key, "{}");
    HttpResponse<byte[]> retry = http.post("/stripe/status/500", null, key, "{}");

    assertThat(retry.statusCode()).isEqualTo(500);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(app.executions("null", key)).isEqualTo(1);
  }

  @Test
  void aTerminalFailureIsReplayedAsAProblem() {
    String key = newKey();
    assertThat(http.post("/terminal/boom", null, key, "{}").statusCode()).isEqualTo(500);
    HttpResponse<byte[]> retry = http.post("/terminal/boom", null, key, "{}");

    assertProblem(retry, Problem.ORIGINAL_FAILED);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(app.executions("null", key)).isEqualTo(1);
  }

  @Test
  void aResponseFromSendErrorIsNotStored() {
    String key = newKey();
    assertThat(http.post("/api/senderror", "alice", key, "{}").statusCode()).isEqualTo(404);
    assertThat(http.post("/api/senderror", "alice", key, "{}").statusCode()).isEqualTo(404);

    assertThat(app.executions("alice", key)).isEqualTo(2);
  }

  @Test
  void anOversizedResponseIsSentStoredWithoutItsBodyAndNeverRunAgain() {
    String key = newKey();
    try (CapturedLog log = new CapturedLog()) {
      HttpResponse<byte[]> first = http.post("/small/big/5000", null, key, "{}");
      assertThat(first.statusCode()).isEqualTo(200);
      assertThat(first.body()).hasSize(5000);
      assertThat(log.warnings()).anyMatch(m -> m.contains("maxResponseBytes"));
    }
    assertThat(record("http", "", key)).map(IdempotencyRecord::status)
        .contains(Status.COMPLETED);
    HttpResponse<byte[]> retry = http.post("/small/big/5000", null, key, "{}");
    assertNotStoredReplay(retry, 200);
    assertThat(app.executions("null", key)).isEqualTo(1);

    // Under the bound the same filter stores and replays.
    String small = newKey();
    http.post("/small/big/900", null, small, "{}");
    assertThat(header(http.post("/small/big/900", null, small, "{}"), "Idempotent-Replayed"))
        .isEqualTo("true");
  }

  static void assertNotStoredReplay(HttpResponse<byte[]> retry, int originalStatus) {
    assertThat(retry.statusCode()).isEqualTo(originalStatus);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(header(retry, "Content-Type")).startsWith(PROBLEM_JSON);
    assertThat(text(retry)).contains(Problem.RESPONSE_NOT_STORED.type())
        .contains("\"status\":" + originalStatus);
  }

  // --- nothing after the application returned runs it again (issue 14) ------------------------

  @ParameterizedTest(name = "{0} bytes")
  @ValueSource(ints = {1_000, 100_000, 400_000})
  void aClientThatHangsUpMidAnswerGetsTheReplayAndTheHandlerRanOnce(int size) throws Exception {
    for (int attempt = 0; attempt < 20; attempt++) {
      String key = newKey();
      byte[] head = http.postAndHangUp("/api/big/" + size, "alice", key, "{}", 64);
      assertThat(new String(head, StandardCharsets.ISO_8859_1)).startsWith("HTTP/1.1 200");

      HttpResponse<byte[]> retry = http.post("/api/big/" + size, "alice", key, "{}");

      assertThat(retry.statusCode()).as("try %d", attempt).isEqualTo(200);
      assertThat(header(retry, "Idempotent-Replayed")).as("try %d", attempt).isEqualTo("true");
      assertThat(retry.body()).hasSize(size);
      assertThat(app.executions("alice", key)).as("try %d", attempt).isEqualTo(1);
    }
  }

  @Test
  void aClientThatHangsUpMidAnswerAboveTheBoundIsNeverRunAgain() throws Exception {
    int size = once.config().maxPayloadBytes() + 500_000;
    for (int attempt = 0; attempt < 20; attempt++) {
      String key = newKey();
      byte[] head = http.postAndHangUp("/api/big/" + size, "alice", key, "{}", 64);
      assertThat(new String(head, StandardCharsets.ISO_8859_1)).startsWith("HTTP/1.1 200");
      // Past the bound the answer streams before the outcome is stored: wait for the record.
      awaitStatus(IdempotencyKey.of("http", "alice", key), Status.COMPLETED);

      HttpResponse<byte[]> retry = http.post("/api/big/" + size, "alice", key, "{}");

      assertNotStoredReplay(retry, 200);
      assertThat(app.executions("alice", key)).as("try %d", attempt).isEqualTo(1);
    }
  }

  @Test
  void aRetrySentTheMomentTheAnswerArrivesIsAReplayNeverA409() {
    for (int attempt = 0; attempt < 200; attempt++) {
      String key = newKey();
      HttpResponse<byte[]> first = http.post("/api/flushed/20000", "alice", key, "{}");
      HttpResponse<byte[]> retry = http.post("/api/flushed/20000", "alice", key, "{}");

      assertThat(first.body()).hasSize(20_000);
      assertThat(retry.statusCode()).as("try %d: %s", attempt, text(retry)).isEqualTo(200);
      assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
      assertThat(retry.body()).isEqualTo(first.body());
      assertThat(app.executions("alice", key)).isEqualTo(1);
    }
  }

  @Test
  void noByteOfTheAnswerLeavesBeforeTheOutcomeIsStored() throws Exception {
    String key = newKey();
    ContractApp.Gate gate = app.gate(key);
    HttpRequest request = http.post("/api/held/20000", "alice", key, "{}", "application/json");
    CompletableFuture<HttpResponse<byte[]>> first = http.sendAsync(request);
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
    try {
      // The handler flushed its whole answer and has not returned: the client must not have it.
      assertThatThrownBy(() -> first.get(300, TimeUnit.MILLISECONDS))
          .isInstanceOf(TimeoutException.class);
    } finally {
      gate.release.countDown();
    }
    HttpResponse<byte[]> answer = first.get(20, TimeUnit.SECONDS);
    HttpResponse<byte[]> retry = http.send(request);

    assertThat(answer.body()).hasSize(20_000);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(retry.body()).isEqualTo(answer.body());
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  /** Waits (bounded) for the record of {@code key} to reach {@code status}. */
  void awaitStatus(IdempotencyKey key, Status status) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (store.find(key).map(IdempotencyRecord::status).orElse(null) != status) {
      assertThat(System.nanoTime()).as("%s never reached %s", key, status).isLessThan(deadline);
      Thread.sleep(2);
    }
  }

  // --- what the filter leaves alone ---------------------------------------------------------

  @Test
  void unprotectedRequestsPassThroughUntouched() {
    String key = newKey();
    HttpResponse<byte[]> get1 = http.send(http.request("/api/charges").header("X-User", "alice")
        .header("Idempotency-Key", key).GET().build());
    HttpResponse<byte[]> get2 = http.send(http.request("/api/charges").header("X-User", "alice")
        .header("Idempotency-Key", key).GET().build());
    HttpResponse<byte[]> put = http.send(http.request("/api/charges").header("X-User", "alice")
        .PUT(HttpRequest.BodyPublishers.ofString("{}")).build());
    HttpResponse<byte[]> excluded = http.post("/api/open/thing", "alice", null, "{}");
    HttpResponse<byte[]> elsewhere = http.post("/other/thing", null, null, "{}");

    assertThat(text(get1)).isNotEqualTo(text(get2));
    assertThat(header(get2, "Idempotent-Replayed")).isNull();
    assertThat(app.executions("alice", key)).isEqualTo(2);
    assertThat(record("http", "alice", key)).isEmpty();
    assertThat(put.statusCode()).isEqualTo(201);
    assertThat(header(put, "Idempotent-Replayed")).isNull();
    assertThat(excluded.statusCode()).isEqualTo(200);
    assertThat(elsewhere.statusCode()).isEqualTo(200);
  }

  @Test
  void anOptionalKeyLetsKeylessRequestsThrough() {
    HttpResponse<byte[]> keyless = http.post("/optional/charges", null, null, "{}");
    String key = newKey();
    http.post("/optional/charges", null, key, "{}");
    HttpResponse<byte[]> retry = http.post("/optional/charges", null, key, "{}");

    assertThat(keyless.statusCode()).isEqualTo(201);
    assertThat(header(retry, "Idempotent-Replayed")).isEqualTo("true");
  }
}
