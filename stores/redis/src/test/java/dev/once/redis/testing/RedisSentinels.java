package dev.once.redis.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Private Redis Sentinels for tests, watching one primary: each in its own temporary directory
 * with the configuration file a Sentinel must be able to rewrite, on a free port of 127.0.0.1,
 * failing over after one second without the primary. Closing kills them and deletes their files.
 */
public final class RedisSentinels implements AutoCloseable {

  private static final String HOST = "127.0.0.1";

  private final String master;
  private final List<Process> processes = new ArrayList<>();
  private final List<Integer> ports = new ArrayList<>();
  private final List<Path> dirs = new ArrayList<>();

  private RedisSentinels(String master) {
    this.master = master;
  }

  /** {@code count} Sentinels watching {@code primary} as {@code master}, quorum a majority. */
  public static RedisSentinels start(int count, String master, RedisServerProcess primary) {
    RedisSentinels sentinels = new RedisSentinels(master);
    try {
      for (int i = 0; i < count; i++) {
        sentinels.launch(primary, count / 2 + 1);
      }
      return sentinels;
    } catch (RuntimeException e) {
      sentinels.close();
      throw e;
    }
  }

  private void launch(RedisServerProcess primary, int quorum) {
    int port = RedisServerProcess.freePort();
    try {
      Path dir = Files.createTempDirectory("once-sentinel-" + port + "-");
      dirs.add(dir);
      Path conf = dir.resolve("sentinel.conf");
      Files.write(conf, List.of("port " + port, "bind " + HOST, "protected-mode no",
          "daemonize no", "dir " + dir, "logfile " + dir.resolve("sentinel.log"),
          "sentinel monitor " + master + " " + HOST + " " + primary.port() + " " + quorum,
          "sentinel down-after-milliseconds " + master + " 1000",
          "sentinel failover-timeout " + master + " 5000"));
      processes.add(new ProcessBuilder(RedisServerProcess.binary(), conf.toString(), "--sentinel")
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("out.log").toFile()))
          .start());
      ports.add(port);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (true) {
      try {
        if ("PONG".equals(Resp.call(HOST, port, "PING"))) {
          return;
        }
      } catch (UncheckedIOException | Resp.ErrorReply e) {
        // not listening yet
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the Sentinel on port " + port + " did not answer");
      }
      RedisServerProcess.pause();
    }
  }

  /** {@code redis-sentinel://127.0.0.1:p1,…#master}: Lettuce's Sentinel URI. */
  public String uri() {
    StringBuilder uri = new StringBuilder("redis-sentinel://");
    for (int i = 0; i < ports.size(); i++) {
      uri.append(i == 0 ? "" : ",").append(HOST).append(':').append(ports.get(i));
    }
    return uri.append('#').append(master).toString();
  }

  /** Sends one command to the first Sentinel. */
  public Object call(String... command) {
    return Resp.call(HOST, ports.get(0), command);
  }

  /** Sends one command to every Sentinel; their replies in order. */
  public List<Object> everyOne(String... command) {
    List<Object> replies = new ArrayList<>();
    for (int port : ports) {
      replies.add(Resp.call(HOST, port, command));
    }
    return replies;
  }

  /** The last {@code lines} lines of every Sentinel's log, for a failure message. */
  public String logs(int lines) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < dirs.size(); i++) {
      out.append("\n--- Sentinel on port ").append(ports.get(i)).append(" ---\n");
      try {
        List<String> all = Files.readAllLines(dirs.get(i).resolve("sentinel.log"));
        all.subList(Math.max(0, all.size() - lines), all.size())
            .forEach(l -> out.append(l).append('\n'));
      } catch (IOException | UncheckedIOException e) {
        out.append("(no log: ").append(e).append(")\n");
      }
    }
    return out.toString();
  }

  /** Waits until every Sentinel knows {@code replicas} replicas and all the other Sentinels. */
  public void awaitDiscovery(int replicas) {
    String expected = "slaves=" + replicas + ",sentinels=" + ports.size();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    for (int port : ports) {
      while (!String.valueOf(Resp.call(HOST, port, "INFO", "sentinel")).contains(expected)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the Sentinels did not discover each other");
        }
        RedisServerProcess.pause();
      }
    }
  }

  @Override
  public void close() {
    for (Process p : processes) {
      p.destroyForcibly();
    }
    for (Process p : processes) {
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (Path dir : dirs) {
      try (var paths = Files.walk(dir)) {
        paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException e) {
        // best effort: a temporary directory
      }
    }
  }
}
