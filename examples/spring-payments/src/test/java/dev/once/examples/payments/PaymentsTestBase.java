package dev.once.examples.payments;

import dev.once.Once;
import dev.once.testkit.OnceRecorder;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The application as it runs: on a random port, against an embedded PostgreSQL (the real Once
 * store: {@code once.store} is left unset) and the RabbitMQ server at localhost:5672, with an
 * {@link OnceRecorder} bean that the starter adds to its {@code Once} (docs/testing.md, "A Spring
 * application", {@link PaymentsTestBeans}). Every test class extends this one, so they share one
 * application context.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "server.address=127.0.0.1")
@Import(PaymentsTestBeans.class)
abstract class PaymentsTestBase {

  static final EmbeddedPostgres POSTGRES = startPostgres();

  /** This run's queue: another build using the same broker never takes its messages. */
  static final String QUEUE = "payments-test-" + UUID.randomUUID().toString().substring(0, 8);

  @LocalServerPort
  int port;

  @Autowired
  JdbcTemplate jdbc;

  @Autowired
  Once once;

  @Autowired
  OnceRecorder recorder;

  private final HttpClient http = HttpClient.newHttpClient();

  @DynamicPropertySource
  static void services(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", () -> POSTGRES.getJdbcUrl("postgres", "postgres"));
    registry.add("spring.datasource.hikari.maximum-pool-size", () -> "30");
    registry.add("payments.queue", () -> QUEUE);
  }

  /** POSTs {@code json} to {@code path} with {@code key} as its Idempotency-Key (none if null). */
  HttpResponse<String> post(String path, String key, String json)
      throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  void wallet(String id, long balance) {
    jdbc.update("INSERT INTO wallet (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE"
        + " SET balance = excluded.balance", id, balance);
  }

  long balance(String id) {
    return jdbc.queryForObject("SELECT balance FROM wallet WHERE id = ?", Long.class, id);
  }

  long charges(String wallet) {
    return jdbc.queryForObject("SELECT count(*) FROM charge WHERE wallet_id = ?", Long.class,
        wallet);
  }

  private static EmbeddedPostgres startPostgres() {
    try {
      EmbeddedPostgres postgres = EmbeddedPostgres.builder()
          .setServerConfig("fsync", "off")
          .setServerConfig("synchronous_commit", "off")
          .start();
      // PostgreSQL stops in a shutdown hook, after the cached Spring context has closed its pool.
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          postgres.close();
        } catch (IOException e) {
          // exiting anyway
        }
      }));
      return postgres;
    } catch (IOException e) {
      throw new IllegalStateException("embedded PostgreSQL did not start", e);
    }
  }
}
