package dev.once.benchmarks;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/**
 * A {@code redis-server} of a benchmark's own: no persistence, a free loopback port, its files in
 * a temporary directory deleted on close. {@code ONCE_REDIS_SERVER} names another binary.
 */
final class PrivateRedisServer implements AutoCloseable {

  private final Process process;
  private final Path dir;
  private final String uri;

  private PrivateRedisServer(Process process, Path dir, String uri) {
    this.process = process;
    this.dir = dir;
    this.uri = uri;
  }

  static PrivateRedisServer start() throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      port = s.getLocalPort();
    }
    Path dir = Files.createTempDirectory("once-bench-redis");
    String binary = System.getenv().getOrDefault("ONCE_REDIS_SERVER", "redis-server");
    Process process = new ProcessBuilder(binary, "--port", Integer.toString(port), "--bind",
        "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString())
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve("redis.log").toFile())
        .start();
    Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly));
    for (int i = 0; i < 500; i++) {
      try (Socket probe = new Socket("127.0.0.1", port)) {
        return new PrivateRedisServer(process, dir, "redis://127.0.0.1:" + port);
      } catch (IOException notYet) {
        Thread.sleep(10);
      }
    }
    process.destroyForcibly();
    throw new IllegalStateException("redis-server did not start: see " + dir);
  }

  String uri() {
    return uri;
  }

  @Override
  public void close() throws IOException {
    process.destroyForcibly();
    try (var paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
