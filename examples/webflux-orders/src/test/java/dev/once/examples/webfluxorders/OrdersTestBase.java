package dev.once.examples.webfluxorders;

import dev.once.Once;
import dev.once.testkit.OnceRecorder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The application as it runs: Reactor Netty on 127.0.0.1 and a random port, its SQLite file in a
 * new directory under target/, called over real HTTP. An {@link OnceRecorder} bean, which the
 * starter adds to its {@code Once} like any OnceListener bean, tells what Once did key by key.
 * Every test class extends this one, so they share one application context.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "server.address=127.0.0.1")
@Import(OrdersTestBeans.class)
abstract class OrdersTestBase {

  /** This run's database: a fresh file, so no record of an earlier run is replayed. */
  static final Path DATABASE = freshDatabase();

  @LocalServerPort
  int port;

  @Autowired
  Once once;

  @Autowired
  OnceRecorder recorder;

  @Autowired
  Orders orders;

  @Autowired
  Warehouse warehouse;

  @Autowired
  CardGateway gateway;

  @Autowired
  StoreCredit credit;

  @Autowired
  Payments payments;

  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("orders.db", DATABASE::toString);
  }

  /** A POST of {@code json} to {@code path}, with {@code key} as its Idempotency-Key (none if null). */
  HttpRequest post(String path, String key, String json) {
    HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return request.build();
  }

  HttpResponse<byte[]> send(HttpRequest request) throws IOException, InterruptedException {
    return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
  }

  HttpResponse<byte[]> get(String path) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build());
  }

  static String text(HttpResponse<byte[]> response) {
    return new String(response.body(), java.nio.charset.StandardCharsets.UTF_8);
  }

  private static Path freshDatabase() {
    try {
      Path target = Files.createDirectories(Path.of("target"));
      return Files.createTempDirectory(target, "orders-test-").resolve("orders.db");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
