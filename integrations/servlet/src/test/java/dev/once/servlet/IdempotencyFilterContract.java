package dev.once.servlet;

import static dev.once.servlet.Http.header;
import static dev.once.servlet.Http.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.FailurePolicy;
import dev.once.IdempotencyKey;
import dev.once.InProgressPolicy;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.servlet.internal.Tenants;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.testkit.ManualClock;
import jakarta.servlet.Filter;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The HTTP contract of {@link IdempotencyFilter}, over real HTTP against an embedded Tomcat, run
 * once per store. Every test uses fresh keys, so the tests share one server and one store.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class IdempotencyFilterContract {

  static final String PROBLEM_JSON = "application/problem+json";
  static final Duration LEASE = Duration.ofSeconds(30);

  final ManualClock clock = new ManualClock();
  final TestApp app = new TestApp();
  final CountDownLatch waitingClaims = new CountDownLatch(3);
  Path dir;
  IdempotencyStore store;
  Once once;
  TestServer server;
  Http http;

  /** The store under test, in {@code dir} if it needs files. */
  abstract IdempotencyStore newStore(Path dir) throws Exception;

  @BeforeAll
  void startServer() throws Exception {
    dir = Files.createTempDirectory("once-servlet");
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
    // A real store whose table was never created: every call fails as a lost database would.
    JdbcStore broken = JdbcStore.builder(JdbcStore.sqliteDataSource(dir.resolve("empty.db")))
        .dialect(JdbcDialect.SQLITE).build();
    Once down = Once.builder(broken).clock(clock).build();

    Map<String, Filter> filters = new LinkedHashMap<>();
    filters.put("auth", new TestAuthFilter());
    filters.put("api", IdempotencyFilter.builder(once).paths("/api/**")
        .excludePaths("/api/open/**").tenantResolver(TenantResolver.principal())
        .maxRequestBytes(64 * 1024).build());
    filters.put("keys", IdempotencyFilter.builder(once).paths("/keys/**").scope("keys")
        .tenantResolver(TenantResolver.header("X-Api-Key")).build());
    filters.put("stripe", IdempotencyFilter.builder(once).paths("/stripe/**")
        .storeServerErrors(true).build());
    filters.put("small", IdempotencyFilter.builder(once).paths("/small/**")
        .maxResponseBytes(1000).build());
    filters.put("optional", IdempotencyFilter.builder(once).paths("/optional/**")
        .keyRequired(false).build());
    filters.put("terminal", IdempotencyFilter.builder(terminal).paths("/terminal/**").build());
    filters.put("wait", IdempotencyFilter.builder(waiting).paths("/wait/**").build());
    filters.put("down", IdempotencyFilter.builder(down).paths("/down/**").build());
    server = TestServer.start(filters, app);
    http = new Http(server);
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

  static String newKey() {
    return "k-" + UUID.randomUUID();
  }

  static void assertProblem(HttpResponse<byte[]> response, IdempotencyProblem problem) {
    assertThat(response.statusCode()).as(text(response)).isEqualTo(problem.status());
    assertThat(header(response, "Content-Type")).startsWith(PROBLEM_JSON);
    assertThat(text(response)).contains("\"type\":\"" + problem.type() + "\"")
        .contains("\"status\":" + problem.status()).contains("\"title\":\"" + problem.title())
        // The request's path, as Spring answers a ProblemDetail (issue 24: one vocabulary).
        .contains("\"instance\":\"" + response.uri().getRawPath() + "\"");
    // The headers the one vocabulary gives each problem.
    assertThat(response.headers().firstValue(IdempotencyProblem.RETRY_AFTER_HEADER).isPresent())
        .as("Retry-After").isEqualTo(problem.retryAfter());
    if (problem.replayed()) {
      assertThat(header(response, IdempotencyProblem.REPLAYED_HEADER)).isEqualTo("true");
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
    TestApp.Gate gate = app.gate(key);
    CompletableFuture<HttpResponse<byte[]>> first =
        http.sendAsync(http.post("/api/slow", "alice", key, "{}", "application/json"));
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();

    HttpResponse<byte[]> second = http.post("/api/slow", "alice", key, "{}");
    assertProblem(second, IdempotencyProblem.IN_PROGRESS);
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
    TestApp.Gate gate = app.gate(key);
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
    TestApp.Gate gate = app.gate(key);
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
    int before = app.total.get();
    HttpResponse<byte[]> response = http.post("/api/charges", "alice", null, "{}");

    assertProblem(response, IdempotencyProblem.KEY_MISSING);
    assertThat(app.total.get()).isEqualTo(before);
  }

  @Test
  void malformedKeysAreRefused() {
    String tooLong = "k".repeat(256);
    for (String bad : List.of("\"\"", "\"   \"", tooLong, "\"" + tooLong + "\"", "\"abc",
        "\"abc\";p=1", "a b", "a\"b", "\"a\\nb\"")) {
      HttpResponse<byte[]> response = http.post("/api/charges", "alice", bad, "{}");
      assertProblem(response, IdempotencyProblem.KEY_INVALID);
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

    assertProblem(response, IdempotencyProblem.KEY_INVALID);
  }

  @Test
  void keysWithBytesNoClientLibrarySendsAreRefused() throws Exception {
    int before = app.total.get();
    assertThat(http.raw("POST /api/charges HTTP/1.1\r\nX-User: alice\r\nIdempotency-Key: caf\u00e9"))
        .isEqualTo(400);
    assertThat(http.raw("POST /api/charges HTTP/1.1\r\nX-User: alice\r\nIdempotency-Key: a\tb"))
        .isEqualTo(400);
    assertThat(http.raw("POST /api/charges HTTP/1.1\r\nX-User: alice\r\nIdempotency-Key: \"a\tb\""))
        .isEqualTo(400);
    assertThat(app.total.get()).isEqualTo(before);
  }

  @Test
  void aKeyReusedForAnotherRequestIsRefusedInEveryState() throws Exception {
    String key = newKey();
    // While the original is in progress.
    TestApp.Gate gate = app.gate(key);
    CompletableFuture<HttpResponse<byte[]>> first =
        http.sendAsync(http.post("/api/slow", "alice", key, "{\"a\":1}", "application/json"));
    assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
    assertProblem(http.post("/api/slow", "alice", key, "{\"a\":2}"),
        IdempotencyProblem.KEY_REUSED);
    gate.release.countDown();
    assertThat(first.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);

    // After it completed: another body, path, query or method target.
    assertProblem(http.post("/api/slow", "alice", key, "{\"a\":2}"),
        IdempotencyProblem.KEY_REUSED);
    assertProblem(http.post("/api/charges", "alice", key, "{\"a\":1}"),
        IdempotencyProblem.KEY_REUSED);
    assertProblem(http.post("/api/slow?x=1", "alice", key, "{\"a\":1}"),
        IdempotencyProblem.KEY_REUSED);
    HttpResponse<byte[]> patch = http.send(http.request("/api/slow").header("X-User", "alice")
        .header("Idempotency-Key", key).header("Content-Type", "application/json")
        .method("PATCH", HttpRequest.BodyPublishers.ofString("{\"a\":1}")).build());
    assertProblem(patch, IdempotencyProblem.KEY_REUSED);
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void aKeyReusedAfterAFailureIsRefused() {
    String key = newKey();
    assertThat(http.post("/api/boom", "alice", key, "{}").statusCode()).isEqualTo(500);
    assertThat(record("http", "alice", key)).map(IdempotencyRecord::status)
        .contains(Status.FAILED);

    assertProblem(http.post("/api/boom", "alice", key, "{\"other\":true}"),
        IdempotencyProblem.KEY_REUSED);
  }

  @Test
  void anOversizedRequestBodyIsRefused() {
    int before = app.total.get();
    HttpResponse<byte[]> response = http.post("/api/charges", "alice", newKey(),
        "{\"pad\":\"" + "x".repeat(70 * 1024) + "\"}");

    assertProblem(response, IdempotencyProblem.REQUEST_TOO_LARGE);
    assertThat(app.total.get()).isEqualTo(before);
  }

  @Test
  void aStoreFailureBeforeTheApplicationRanIsA503() {
    String key = newKey();
    HttpResponse<byte[]> response = http.post("/down/charges", null, key, "{}");

    assertProblem(response, IdempotencyProblem.STORE_UNAVAILABLE);
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

    assertProblem(response, IdempotencyProblem.TENANT_UNKNOWN);
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
    assertThat(record("keys", Tenants.normalize(Tenants.digest("sk_one")), key)).isPresent();
    assertProblem(http.send(base.copy().build()), IdempotencyProblem.TENANT_UNKNOWN);
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
    TestApp.Gate gate = app.gate(key);
    try (CapturedLog log = new CapturedLog()) {
      CompletableFuture<HttpResponse<byte[]>> stalled =
          http.sendAsync(http.post("/api/slow", "alice", key, "{}", "application/json"));
      assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
      assertProblem(http.post("/api/slow", "alice", key, "{}"), IdempotencyProblem.IN_PROGRESS);

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
    assertThat(app.mails.get(key)).hasValue(1);
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

    assertProblem(retry, IdempotencyProblem.ORIGINAL_FAILED);
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
    assertThat(text(retry)).contains(IdempotencyProblem.RESPONSE_NOT_STORED.type())
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
    TestApp.Gate gate = app.gate(key);
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
