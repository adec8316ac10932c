package dev.once.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.spi.IdempotencyRecord;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Status;
import dev.once.testkit.http.ContractApp;
import dev.once.testkit.http.ContractHttp;
import dev.once.testkit.http.ContractServer;
import dev.once.testkit.http.HttpIdempotencyContract;
import dev.once.testkit.http.Route;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.web.server.WebFilter;

/**
 * The published HTTP contract ({@link HttpIdempotencyContract}, the servlet filter's and the
 * JAX-RS filter's) over {@link IdempotencyWebFilter} on Reactor Netty, a real HTTP server on
 * 127.0.0.1: an authentication filter, one filter per route, then {@link ContractHandler}. Plus
 * what a non-blocking filter must show besides: no store call on an event-loop thread, a client
 * gone while the application runs loses nothing, and the application, subscribed apart from the
 * connection, still sees the Reactor Context of the filters before it.
 */
abstract class WebFluxContract extends HttpIdempotencyContract {

  /** Names of the threads every store call of the server's routes ran on. */
  final Set<String> storeThreads = ConcurrentHashMap.newKeySet();

  @Override
  protected IdempotencyStore unreachableStore(Path dir) {
    // A real store whose table was never created: every call fails as a lost database would.
    return JdbcStore.builder(JdbcStore.sqliteDataSource(dir.resolve("empty.db")))
        .dialect(JdbcDialect.SQLITE).build();
  }

  @Override
  protected ContractServer start(Map<String, Route> routes, ContractApp app) {
    List<WebFilter> filters = new ArrayList<>();
    filters.add(new TestAuthFilter());
    routes.values().forEach(route -> filters.add(filter(route)));
    return TestServer.start(filters, new ContractHandler(app));
  }

  /** The filter a route describes, its Once also telling which threads call the store. */
  IdempotencyWebFilter filter(Route route) {
    OnceListener threads = new OnceListener() {
      @Override
      public void onStoreCall(String operation, Duration elapsed, boolean succeeded) {
        storeThreads.add(Thread.currentThread().getName());
      }
    };
    Once once = route.once().toBuilder()
        .listener(OnceListener.compose(route.once().config().listener(), threads)).build();
    IdempotencyWebFilter.Builder builder = IdempotencyWebFilter.builder(once)
        .paths(route.paths()).excludePaths(route.excludePaths())
        .storeServerErrors(route.storeServerErrors()).keyRequired(route.keyRequired())
        .tenantResolver(switch (route.tenant()) {
          case SHARED -> TenantResolver.none();
          case PRINCIPAL -> TenantResolver.principal();
          case API_KEY -> TenantResolver.header("X-Api-Key");
        });
    if (route.scope() != null) {
      builder.scope(route.scope());
    }
    if (route.maxRequestBytes() != null) {
      builder.maxRequestBytes(route.maxRequestBytes());
    }
    if (route.maxResponseBytes() != null) {
      builder.maxResponseBytes(route.maxResponseBytes());
    }
    return builder.build();
  }

  @Override
  protected String loggerName() {
    return IdempotencyWebFilter.class.getName();
  }

  // --- what only a non-blocking filter must show -----------------------------------------

  @Test
  void noStoreCallRunsOnAnEventLoopThread() {
    String key = "k-" + UUID.randomUUID();
    http.post("/api/charges", "alice", key, "{}");
    http.post("/api/charges", "alice", key, "{}");
    http.post("/api/charges", "alice", key, "{\"other\":1}");

    // Reactor Netty's event loops are reactor-http-nio-N (or -epoll-N).
    assertThat(storeThreads).isNotEmpty().noneMatch(name -> name.startsWith("reactor-http"));
  }

  @Test
  void aClientGoneWhileTheApplicationRunsLosesNothingAndItsRetryReplays() throws Exception {
    String key = "k-" + UUID.randomUUID();
    ContractApp.Gate gate = app.gate(key);
    // The client sends its request, then resets the connection while the handler still runs.
    try (Socket client = new Socket()) {
      client.connect(new InetSocketAddress("127.0.0.1", port()), 5_000);
      byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
      OutputStream out = client.getOutputStream();
      out.write(("POST /api/held/20000 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          + "Content-Type: application/json\r\nX-User: alice\r\nIdempotency-Key: " + key
          + "\r\nContent-Length: " + body.length + "\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      out.write(body);
      out.flush();
      assertThat(gate.entered.await(20, TimeUnit.SECONDS)).isTrue();
      assertThat(client.getInputStream().available()).as("bytes sent before stored").isZero();
      client.setSoLinger(true, 0);
    }
    gate.release.countDown();
    IdempotencyKey recordKey = IdempotencyKey.of("http", "alice", key);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (store.find(recordKey).map(IdempotencyRecord::status).orElse(null)
        != Status.COMPLETED) {
      assertThat(System.nanoTime()).as("never stored").isLessThan(deadline);
      Thread.sleep(2); // polling the store, not letting time pass: the clock is manual
    }

    HttpResponse<byte[]> retry = http.post("/api/held/20000", "alice", key, "{}");
    assertThat(retry.statusCode()).isEqualTo(200);
    assertThat(ContractHttp.header(retry, "Idempotent-Replayed")).isEqualTo("true");
    assertThat(retry.body()).hasSize(20_000);
    assertThat(app.executions("alice", key)).isEqualTo(1);
  }

  @Test
  void theApplicationSeesTheReactorContextOfTheFiltersBeforeIt() {
    String key = "k-" + UUID.randomUUID();
    HttpResponse<byte[]> first = http.post("/api/context", "alice", key, "{}");
    HttpResponse<byte[]> retry = http.post("/api/context", "alice", key, "{}");

    assertThat(ContractHttp.text(first)).startsWith("context alice #");
    assertThat(retry.body()).isEqualTo(first.body());
    assertThat(ContractHttp.header(retry, "Idempotent-Replayed")).isEqualTo("true");
  }

  private int port() {
    return http.request("/").build().uri().getPort();
  }
}
