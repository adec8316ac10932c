package dev.once.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.once.cli.demo.CommandRun;
import dev.once.http.IdempotencyProblem;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code once serve} over real HTTP: replays, racing retries, the filter's errors. */
class ServeCommandTest {

  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(5)).build();
  private static final String CHARGE = "{\"customer\":\"cus_1\",\"amount\":1250}";

  /** A running {@code once serve}: the command, the thread running it, what it printed. */
  private record Server(ServeCommand command, CompletableFuture<Integer> exit, StringWriter out,
      StringWriter err) implements AutoCloseable {

    URI uri(String path) {
      return URI.create("http://127.0.0.1:" + command.boundPort() + path);
    }

    @Override
    public void close() throws Exception {
      command.stop();
      assertThat(exit.get(30, TimeUnit.SECONDS)).as(err.toString()).isZero();
    }
  }

  private static Server serve(String... args) throws InterruptedException {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = new CommandLine(new OnceCommand());
    commandLine.setOut(new PrintWriter(out, true));
    commandLine.setErr(new PrintWriter(err, true));
    ServeCommand command = commandLine.getSubcommands().get("serve").getCommand();
    List<String> all = new ArrayList<>(List.of("serve"));
    all.addAll(List.of(args));
    CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(
        () -> commandLine.execute(all.toArray(String[]::new)));
    // Bounded wait for the listening socket (not for time to pass).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (command.boundPort() < 0 && !exit.isDone() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    return new Server(command, exit, out, err);
  }

  private static HttpResponse<String> post(URI uri, String key, String body) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      request.header("Idempotency-Key", key);
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aRetriedChargeIsReplayedByteForByteAndDebitsOnce(@TempDir Path tmp) throws Exception {
    try (Server server = serve("--port", "0", "--store", "sqlite:" + tmp.resolve("once.db"))) {
      assertThat(server.command().boundPort()).as(server.err().toString()).isPositive();
      assertThat(server.out().toString()).contains("Payments API on http://127.0.0.1:"
          + server.command().boundPort(), "Idempotency-Key: order-1");

      HttpResponse<String> first = post(server.uri("/charges"), "order-1", CHARGE);
      HttpResponse<String> retry = post(server.uri("/charges"), "order-1", CHARGE);

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(retry.body()).isEqualTo(first.body()).contains("\"balance\":8750");
      assertThat(retry.headers().firstValue("Location"))
          .isEqualTo(first.headers().firstValue("Location"));
      assertThat(server.command().api().debits()).isEqualTo(1);
    }
  }

  @Test
  void racingRetriesOfOneKeyDebitOnceAndTheFilterAnswersMisuse() throws Exception {
    try (Server server = serve("--port", "0", "--store", "memory:")) {
      int racers = 8;
      CountDownLatch start = new CountDownLatch(1);
      List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        answers.add(CompletableFuture.supplyAsync(() -> {
          try {
            start.await();
            return post(server.uri("/charges"), "race-1", CHARGE);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        }));
      }
      start.countDown();
      List<Integer> statuses = new ArrayList<>();
      for (CompletableFuture<HttpResponse<String>> answer : answers) {
        HttpResponse<String> response = answer.get(30, TimeUnit.SECONDS);
        statuses.add(response.statusCode());
        if (response.statusCode() == 409) {
          assertProblem(response, IdempotencyProblem.IN_PROGRESS, "/charges");
        }
      }
      HttpResponse<String> reused = post(server.uri("/charges"), "race-1",
          "{\"customer\":\"cus_1\",\"amount\":1}");
      HttpResponse<String> noKey = post(server.uri("/charges"), null, CHARGE);
      HttpResponse<String> poor = post(server.uri("/charges"), "big-1",
          "{\"customer\":\"cus_2\",\"amount\":1000000}");
      HttpResponse<String> poorAgain = post(server.uri("/charges"), "big-1",
          "{\"customer\":\"cus_2\",\"amount\":1000000}");

      // One executed (201); the others replayed (201) or told it is in progress (409).
      assertThat(statuses).containsOnly(201, 409).contains(201);
      assertThat(server.command().api().debits()).isEqualTo(1);
      assertThat(server.command().api().balance("cus_1")).isEqualTo(10_000 - 1250);
      assertThat(reused.statusCode()).isEqualTo(422);
      assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(noKey.statusCode()).isEqualTo(400);
      // A 4xx is an outcome too: stored and replayed.
      assertThat(poor.statusCode()).isEqualTo(402);
      assertThat(poorAgain.statusCode()).isEqualTo(402);
      assertThat(poorAgain.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }
  }

  @Test
  void aTakenPortIsOneLineWithExitCode2() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1,
        java.net.InetAddress.getByName("127.0.0.1"))) {
      CommandRun run = CommandRun.run("serve", "--store", "memory:", "--port",
          Integer.toString(taken.getLocalPort()));

      assertThat(run.exitCode()).isEqualTo(2);
      assertThat(run.err()).startsWith("once serve: cannot listen on 127.0.0.1:"
          + taken.getLocalPort()).doesNotContain("\tat ");
      assertThat(run.err().strip()).doesNotContain("\n");
    }
  }

  /**
   * Issue 24: {@code once serve} speaks the one HTTP vocabulary ({@link IdempotencyProblem}) that
   * the filter and the Spring starter's {@code @Idempotent} answers share (compared over HTTP by
   * the starter's {@code IdempotentMatrixContract}): each problem's status, type, title,
   * {@code instance} and headers; and the API's own problems have the same shape, a title
   * included. (A duplicate in progress is checked by the racing test above: the API's handler
   * never waits, so only a race shows one.)
   */
  @Test
  void itSpeaksTheOneHttpVocabulary(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("once.db");
    try (Server server = serve("--port", "0", "--store", "sqlite:" + file)) {
      HttpResponse<String> first = post(server.uri("/charges"), "v-1", CHARGE);
      HttpResponse<String> replay = post(server.uri("/charges"), "v-1", CHARGE);
      assertThat(replay.headers().firstValue(IdempotencyProblem.REPLAYED_HEADER)).hasValue("true");
      assertThat(replay.body()).isEqualTo(first.body());

      assertProblem(post(server.uri("/charges"), null, CHARGE), IdempotencyProblem.KEY_MISSING,
          "/charges");
      assertProblem(post(server.uri("/charges"), "k".repeat(300), CHARGE),
          IdempotencyProblem.KEY_INVALID, "/charges");
      assertProblem(post(server.uri("/charges"), "v-1", "{\"customer\":\"cus_1\",\"amount\":7}"),
          IdempotencyProblem.KEY_REUSED, "/charges");

      // The API's own: 402, stored and replayed like any answer below 500.
      String poor = "{\"customer\":\"cus_9\",\"amount\":1000000}";
      HttpResponse<String> declined = post(server.uri("/charges"), "v-2", poor);
      HttpResponse<String> declinedAgain = post(server.uri("/charges"), "v-2", poor);
      assertOwnProblem(declined, 402, "insufficient-funds", "Insufficient funds", "/charges");
      assertThat(declinedAgain.body()).isEqualTo(declined.body());
      assertThat(declinedAgain.headers().firstValue(IdempotencyProblem.REPLAYED_HEADER))
          .hasValue("true");
      assertOwnProblem(post(server.uri("/refunds"), "v-3", CHARGE), 404, "not-found",
          "Not found", "/refunds");

      // The store unreachable (its table gone): 503 with Retry-After, nothing debited.
      long debits = server.command().api().debits();
      try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
          Statement s = c.createStatement()) {
        s.execute("DROP TABLE once_records");
      }
      HttpResponse<String> down = post(server.uri("/charges"), "v-4", CHARGE);
      assertProblem(down, IdempotencyProblem.STORE_UNAVAILABLE, "/charges");
      assertThat(down.headers().firstValue(IdempotencyProblem.RETRY_AFTER_HEADER)).hasValue("1");
      assertThat(server.command().api().debits()).isEqualTo(debits);
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  /** As the starter's test asserts a problem: status, media type, type, title, instance, headers. */
  private static void assertProblem(HttpResponse<String> response, IdempotencyProblem problem,
      String path) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(problem.status());
    assertThat(response.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith(IdempotencyProblem.MEDIA_TYPE));
    JsonNode body = JSON.readTree(response.body());
    assertThat(body.path("type").asText()).isEqualTo(problem.type());
    assertThat(body.path("title").asText()).isEqualTo(problem.title());
    assertThat(body.path("status").asInt()).isEqualTo(problem.status());
    assertThat(body.path("detail").asText()).isNotBlank();
    assertThat(body.path("instance").asText()).isEqualTo(path);
    assertThat(response.headers().firstValue(IdempotencyProblem.RETRY_AFTER_HEADER).isPresent())
        .as("Retry-After").isEqualTo(problem.retryAfter());
    assertThat(response.headers().firstValue(IdempotencyProblem.REPLAYED_HEADER).isPresent())
        .as("Idempotent-Replayed").isEqualTo(problem.replayed());
  }

  private static void assertOwnProblem(HttpResponse<String> response, int status, String slug,
      String title, String path) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type"))
        .hasValue(IdempotencyProblem.MEDIA_TYPE);
    JsonNode body = JSON.readTree(response.body());
    assertThat(body.path("type").asText())
        .isEqualTo("https://github.com/once-dev/once/blob/main/cli/README.md#" + slug);
    assertThat(body.path("title").asText()).isEqualTo(title);
    assertThat(body.path("status").asInt()).isEqualTo(status);
    assertThat(body.path("detail").asText()).isNotBlank();
    assertThat(body.path("instance").asText()).isEqualTo(path);
  }
}
