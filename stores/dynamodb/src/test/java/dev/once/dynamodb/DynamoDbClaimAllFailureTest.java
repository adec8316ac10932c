package dev.once.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.StoreUnavailableException;
import dev.once.spi.ClaimRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.retry.RetryMode;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * How a parallel {@code claimAll} reports a batch in which one key's write was refused and
 * another's answer never came, against a raw HTTP server that plays DynamoDB: the first
 * UpdateItem is held unanswered (so the batch's second key is started before any failure), every
 * later one and every read is answered with a 400 at once.
 */
class DynamoDbClaimAllFailureTest {

  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);

  @Test
  void aBatchWhoseOtherKeyTimedOutSaysWhyItMayHaveBeenApplied() throws Exception {
    try (FakeDynamoDb server = new FakeDynamoDb();
        DynamoDbClient sync = DynamoDbClient.builder()
            .region(DynamoDbLocal.REGION)
            .endpointOverride(server.uri())
            .credentialsProvider(DynamoDbLocal.credentials())
            .httpClient(UrlConnectionHttpClient.builder().build())
            .overrideConfiguration(overrides())
            .build();
        DynamoDbAsyncClient async = DynamoDbAsyncClient.builder()
            .region(DynamoDbLocal.REGION)
            .endpointOverride(server.uri())
            .credentialsProvider(DynamoDbLocal.credentials())
            .overrideConfiguration(overrides())
            .build();
        DynamoDbStore store = DynamoDbStore.builder(sync).asyncClient(async)
            .table("claim-all-failure").build()) {
      Instant now = Instant.parse("2026-11-27T00:00:00Z");
      List<ClaimRequest> batch = List.of("a", "b").stream()
          .map(k -> new ClaimRequest(IdempotencyKey.of("batch", k), Fingerprint.of("A"), now,
              Duration.ofSeconds(30), Duration.ofHours(1)))
          .toList();

      // The refused key fails first; the other's write was sent and never answered: it may
      // have been applied, and so may the batch. The exception says which write made it so.
      assertThatThrownBy(() -> store.claimAll(batch)).isInstanceOfSatisfying(
          StoreUnavailableException.class, e -> {
            assertThat(e.mayHaveBeenApplied()).isTrue();
            assertThat(e.getCause().getMessage()).contains("400");
            assertThat(Arrays.stream(e.getSuppressed()).anyMatch(
                s -> s.getClass().getSimpleName().equals("ApiCallTimeoutException")))
                .as("%s, suppressed %s", e, Arrays.toString(e.getSuppressed())).isTrue();
          });
    }
  }

  private static ClientOverrideConfiguration overrides() {
    return ClientOverrideConfiguration.builder()
        .retryStrategy(RetryMode.STANDARD)
        .apiCallTimeout(CALL_TIMEOUT)
        .build();
  }

  /** Just enough HTTP/1.1 to answer or hold DynamoDB's JSON requests, a thread a connection. */
  private static final class FakeDynamoDb implements AutoCloseable {
    private static final String REFUSAL = "{\"__type\":\"com.amazon.coral.validate#"
        + "ValidationException\",\"message\":\"refused by the test\"}";
    private final ServerSocket socket;
    private final AtomicBoolean heldAWrite = new AtomicBoolean();
    private final Thread acceptor;

    FakeDynamoDb() throws IOException {
      socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      acceptor = new Thread(this::accept, "fake-dynamodb");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    URI uri() {
      return URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }

    private void accept() {
      while (!socket.isClosed()) {
        try {
          Socket connection = socket.accept();
          Thread t = new Thread(() -> serve(connection), "fake-dynamodb-connection");
          t.setDaemon(true);
          t.start();
        } catch (IOException closed) {
          return;
        }
      }
    }

    private void serve(Socket connection) {
      try (connection; InputStream in = connection.getInputStream();
          OutputStream out = connection.getOutputStream()) {
        while (true) {
          String head = readHead(in);
          if (head == null) {
            return;
          }
          in.readNBytes(contentLength(head));
          boolean write = head.toLowerCase(Locale.ROOT).contains("dynamodb_20120810.updateitem");
          if (write && heldAWrite.compareAndSet(false, true)) {
            // Held: the write reached the server and its answer never comes.
            in.read();
            return;
          }
          byte[] body = REFUSAL.getBytes(StandardCharsets.UTF_8);
          out.write(("HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\n"
              + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
          out.write(body);
          out.flush();
        }
      } catch (IOException gone) {
        // The client closed the connection.
      }
    }

    private static String readHead(InputStream in) throws IOException {
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      int matched = 0;
      while (matched < 4) {
        int b = in.read();
        if (b < 0) {
          return null;
        }
        head.write(b);
        matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
      }
      return head.toString(StandardCharsets.ISO_8859_1);
    }

    private static int contentLength(String head) {
      for (String line : head.split("\r\n")) {
        if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
          return Integer.parseInt(line.substring(line.indexOf(':') + 1).trim());
        }
      }
      return 0;
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
