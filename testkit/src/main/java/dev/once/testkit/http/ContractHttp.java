package dev.once.testkit.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** A real HTTP client (java.net.http and raw sockets) against a {@link ContractServer}. */
public final class ContractHttp {

  private final ContractServer server;
  private final HttpClient client = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

  /** A client of {@code server}. */
  public ContractHttp(ContractServer server) {
    this.server = server;
  }

  /** A request builder for {@code pathAndQuery}, with a generous timeout. */
  public HttpRequest.Builder request(String pathAndQuery) {
    return HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + server.port() + pathAndQuery)).timeout(Duration.ofSeconds(30));
  }

  /** POST with a JSON body as {@code user}, with key header {@code key} when not null. */
  public HttpResponse<byte[]> post(String path, String user, String key, String json) {
    return send(post(path, user, key, json, "application/json"));
  }

  /** A POST of {@code body} as {@code contentType}, as {@code user}, with {@code key} if not null. */
  public HttpRequest post(String path, String user, String key, String body, String contentType) {
    HttpRequest.Builder b = request(path).header("Content-Type", contentType)
        .POST(HttpRequest.BodyPublishers.ofString(body));
    if (user != null) {
      b.header("X-User", user);
    }
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return b.build();
  }

  /** Sends {@code request}, the body as bytes. */
  public HttpResponse<byte[]> send(HttpRequest request) {
    try {
      return client.send(request, HttpResponse.BodyHandlers.ofByteArray());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Sends {@code request} without waiting. */
  public CompletableFuture<HttpResponse<byte[]>> sendAsync(HttpRequest request) {
    return client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
  }

  /**
   * Sends {@code head} (request line and headers, CRLF-separated, without the final blank line)
   * byte for byte as ISO-8859-1 over a socket, for header values no well-behaved client sends, and
   * returns the status code.
   */
  public int raw(String head) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", server.port())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write((head + "\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      InputStream in = socket.getInputStream();
      String response = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
      return Integer.parseInt(response.substring(9, 12));
    }
  }

  /**
   * POSTs {@code body} as {@code user} with {@code key} over a raw socket with a small receive
   * buffer, reads the first {@code bytes} bytes of the answer, then resets the connection
   * (SO_LINGER 0), as a client that crashes or times out mid-answer does.
   *
   * @return what was read before hanging up
   */
  public byte[] postAndHangUp(String path, String user, String key, String body, int bytes)
      throws IOException {
    Socket socket = new Socket();
    try {
      // Small, so a large answer cannot sit whole in the kernel's buffers: the server is still
      // writing when the reset arrives.
      socket.setReceiveBufferSize(4096);
      socket.connect(new java.net.InetSocketAddress("127.0.0.1", server.port()), 5_000);
      socket.setSoTimeout(30_000);
      byte[] content = body.getBytes(StandardCharsets.UTF_8);
      OutputStream out = socket.getOutputStream();
      out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          + "Content-Type: application/json\r\nX-User: " + user + "\r\nIdempotency-Key: " + key
          + "\r\nContent-Length: " + content.length + "\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      out.write(content);
      out.flush();
      return socket.getInputStream().readNBytes(bytes);
    } finally {
      socket.setSoLinger(true, 0);
      socket.close();
    }
  }

  /** The body as UTF-8 text. */
  public static String text(HttpResponse<byte[]> response) {
    return new String(response.body(), StandardCharsets.UTF_8);
  }

  /** The first value of a header, or null. */
  public static String header(HttpResponse<?> response, String name) {
    return response.headers().firstValue(name).orElse(null);
  }
}
