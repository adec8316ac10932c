package dev.once.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code once serve} in a JVM of its own, driven from outside over raw sockets as the audit of
 * issue 14 did: a client that hangs up mid-answer and retries is replayed and debited once, at
 * every answer size; a retry sent the moment the answer arrives is a replay, never a 409.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ServeFromOutsideTest {

  private static final Pattern LISTENING = Pattern.compile("Payments API on http://127\\.0\\.0\\.1:(\\d+)");
  private static final long OPENING_BALANCE = PaymentsApi.OPENING_BALANCE_CENTS;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final List<String> output = new CopyOnWriteArrayList<>();
  private Process server;
  private int port;

  @BeforeAll
  void startServer(@TempDir Path tmp) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    server = new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
        OnceCommand.class.getName(), "serve", "--port", "0", "--store",
        "sqlite:" + tmp.resolve("once.db"))
        .redirectErrorStream(true).start();
    CompletableFuture<Integer> listening = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(new InputStreamReader(
          server.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = lines.readLine()) != null; ) {
          output.add(line);
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            listening.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (IOException e) {
        listening.completeExceptionally(e);
      }
      listening.completeExceptionally(new IllegalStateException("once serve ended: " + output));
    }, "once-serve-output");
    reader.setDaemon(true);
    reader.start();
    port = listening.get(120, TimeUnit.SECONDS);
  }

  @AfterAll
  void stopServer() throws Exception {
    if (server != null) {
      server.destroy(); // SIGTERM: the command's shutdown hook stops Tomcat
      if (!server.waitFor(30, TimeUnit.SECONDS)) {
        server.destroyForcibly();
      }
    }
  }

  @Test
  void aClientThatHangsUpMidAnswerIsReplayedAndDebitedOnceAtEverySize() throws Exception {
    // 1 KB, 100 KB, 400 KB answers; and one larger than the stored bound (1 MiB) whose request
    // still fits the request bound (1 MiB).
    int[] customerLengths = {1_000, 100_000, 400_000, (1 << 20) - 45};
    for (int length : customerLengths) {
      String customer = "cus_" + length + "_" + "L".repeat(length);
      for (int attempt = 0; attempt < 20; attempt++) {
        String key = "abort-" + length + "-" + attempt;
        String body = "{\"customer\":\"" + customer + "\",\"amount\":10}";
        byte[] head = postAndHangUp(key, body);
        assertThat(new String(head, StandardCharsets.ISO_8859_1)).as(output.toString())
            .startsWith("HTTP/1.1 201");

        boolean aboveBound = length == customerLengths[customerLengths.length - 1];
        HttpResponse<String> retry = aboveBound ? retryUntilNotInProgress(key, body)
            : post(key, body);

        long expected = OPENING_BALANCE - 10L * (attempt + 1);
        assertThat(retry.statusCode()).as("%d chars, try %d", length, attempt).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        if (!aboveBound) {
          assertThat(retry.body()).as("%d chars, try %d", length, attempt)
              .contains("\"amount\":10,\"balance\":" + expected + ",");
        } else {
          assertThat(retry.body()).contains("idempotency-response-not-stored");
        }
      }
      // One more charge with a new key: exactly one debit per key before it.
      HttpResponse<String> next = post("next-" + length,
          "{\"customer\":\"" + customer + "\",\"amount\":1}");
      assertThat(next.body()).contains("\"balance\":" + (OPENING_BALANCE - 201) + ",");
    }
  }

  @Test
  void aRetrySentTheMomentTheAnswerArrivesIsAReplayNeverA409() throws Exception {
    for (int attempt = 0; attempt < 200; attempt++) {
      String key = "instant-" + attempt;
      String body = "{\"customer\":\"cus_instant\",\"amount\":1}";
      HttpResponse<String> first = post(key, body);
      HttpResponse<String> retry = post(key, body);

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(retry.statusCode()).as("try %d: %s", attempt, retry.body()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(retry.body()).isEqualTo(first.body());
    }
    HttpResponse<String> wallet = http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/wallets/cus_instant")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(wallet.body()).contains("\"balance\":" + (OPENING_BALANCE - 200));
  }

  /** Posts over a socket with a small receive buffer, reads 64 bytes, resets the connection. */
  private byte[] postAndHangUp(String key, String body) throws IOException {
    Socket socket = new Socket();
    try {
      socket.setReceiveBufferSize(4096);
      socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
      socket.setSoTimeout(60_000);
      byte[] content = body.getBytes(StandardCharsets.UTF_8);
      OutputStream out = socket.getOutputStream();
      out.write(("POST /charges HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
          + "Idempotency-Key: " + key + "\r\nContent-Length: " + content.length + "\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      out.write(content);
      out.flush();
      return socket.getInputStream().readNBytes(64);
    } finally {
      socket.setSoLinger(true, 0);
      socket.close();
    }
  }

  /**
   * Retries until the answer is not a 409. Only an answer above the stored bound streams before
   * its outcome is stored, so only then can a retry overtake the handler (bounded).
   */
  private HttpResponse<String> retryUntilNotInProgress(String key, String body) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      HttpResponse<String> answer = post(key, body);
      if (answer.statusCode() != 409 || System.nanoTime() > deadline) {
        return answer;
      }
      Thread.sleep(5);
    }
  }

  private HttpResponse<String> post(String key, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/charges"))
        .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
        .header("Idempotency-Key", key).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
