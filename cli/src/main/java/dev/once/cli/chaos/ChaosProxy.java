package dev.once.cli.chaos;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The TCP proxy of {@code once chaos --proxy}: in the coordinator's process, on a free port of
 * 127.0.0.1, between the workers and a store on this machine. While faults are on it delays
 * chunks of bytes at random ({@value #DELAY_PERCENT}% of them, by up to {@value #MAX_DELAY_MILLIS}
 * ms) and the coordinator has it cut a random connection ({@link #cutOne}) with a TCP reset, in
 * the middle of whatever was being said: a claim, a completion, a commit.
 */
final class ChaosProxy implements AutoCloseable {

  static final int DELAY_PERCENT = 2;
  static final int MAX_DELAY_MILLIS = 300;

  private final InetSocketAddress target;
  private final ServerSocket server;
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final AtomicLong cuts = new AtomicLong();
  private final AtomicLong delays = new AtomicLong();
  private final AtomicLong connections = new AtomicLong();
  private volatile boolean faults = true;
  private volatile boolean closed;

  /**
   * Where a store URI points and the same URI through the proxy.
   *
   * @param host the store's host, a loopback address
   * @param port the store's port
   */
  record Route(String uri, String host, int port, int start, int end) {

    /** {@link #uri} with its host and port replaced by the proxy's. */
    String through(int proxyPort) {
      return uri.substring(0, start) + ChaosPrivateStore.HOST + ":" + proxyPort
          + uri.substring(end);
    }
  }

  /**
   * The route of {@code uri} ({@code postgres://}, {@code mariadb://}, {@code redis://} with one
   * host on this machine).
   *
   * @throws IllegalArgumentException with a one-line message if the proxy cannot stand in front
   *     of it
   */
  static Route route(String uri, String display) {
    String scheme = uri.substring(0, Math.max(0, uri.indexOf(':'))).toLowerCase(Locale.ROOT);
    int defaultPort = switch (scheme) {
      case "postgres", "postgresql" -> 5432;
      case "mariadb" -> 3306;
      case "redis" -> 6379;
      default -> throw new IllegalArgumentException("--proxy works with postgres://, mariadb:// "
          + "and redis:// stores (and private:redis, private:postgres), not " + display);
    };
    int start = uri.indexOf("//") + 2;
    int end = start;
    while (end < uri.length() && "/?#".indexOf(uri.charAt(end)) < 0) {
      end++;
    }
    int at = uri.lastIndexOf('@', end - 1);
    if (at >= start) {
      start = at + 1;
    }
    String hostPort = uri.substring(start, end);
    String host;
    int port = defaultPort;
    int colon = hostPort.startsWith("[") ? hostPort.indexOf(':', hostPort.indexOf(']'))
        : hostPort.lastIndexOf(':');
    if (colon >= 0) {
      host = hostPort.substring(0, colon);
      try {
        port = Integer.parseInt(hostPort.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("store URI '" + display + "' has a malformed port");
      }
    } else {
      host = hostPort;
    }
    host = host.replace("[", "").replace("]", "");
    if (host.isEmpty() || host.contains(",")) {
      throw new IllegalArgumentException("--proxy needs a store URI with one host, not "
          + display);
    }
    try {
      if (!InetAddress.getByName(host).isLoopbackAddress()) {
        throw new IllegalArgumentException("--proxy only stands in front of a store on this "
            + "machine (a loopback address), not " + host);
      }
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("--proxy: unknown host " + host);
    }
    return new Route(uri, host, port, start, end);
  }

  private ChaosProxy(InetSocketAddress target, ServerSocket server) {
    this.target = target;
    this.server = server;
  }

  /** Starts a proxy to {@code host:port} on a free port of 127.0.0.1. */
  static ChaosProxy start(String host, int port) throws IOException {
    ServerSocket server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getByName(ChaosPrivateStore.HOST), 0), 200);
    ChaosProxy proxy = new ChaosProxy(new InetSocketAddress(host, port), server);
    Thread acceptor = new Thread(proxy::accept, "once-chaos-proxy");
    acceptor.setDaemon(true);
    acceptor.start();
    return proxy;
  }

  int port() {
    return server.getLocalPort();
  }

  /** Stops delaying bytes; connections are no longer cut. */
  void calm() {
    faults = false;
  }

  /** Resets one random open connection; whether there was one. */
  boolean cutOne(Random random) {
    List<Link> open = new ArrayList<>(links);
    if (open.isEmpty()) {
      return false;
    }
    open.get(random.nextInt(open.size())).close(true);
    cuts.incrementAndGet();
    return true;
  }

  long cuts() {
    return cuts.get();
  }

  long delays() {
    return delays.get();
  }

  long connections() {
    return connections.get();
  }

  private void accept() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      connections.incrementAndGet();
      Socket upstream = new Socket();
      try {
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        upstream.connect(target, 2_000);
      } catch (IOException e) {
        // The store is down (being restarted): the client sees its connection refused, late.
        closeQuietly(client);
        closeQuietly(upstream);
        continue;
      }
      Link link = new Link(client, upstream);
      links.add(link);
      link.start();
    }
  }

  private final class Link {
    private final Socket client;
    private final Socket upstream;

    Link(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
    }

    void start() {
      thread(() -> pump(client, upstream), "up");
      thread(() -> pump(upstream, client), "down");
    }

    private void thread(Runnable r, String name) {
      Thread t = new Thread(r, "once-chaos-proxy-" + name);
      t.setDaemon(true);
      t.start();
    }

    private void pump(Socket from, Socket to) {
      byte[] buffer = new byte[16 * 1024];
      try {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
          if (faults && ThreadLocalRandom.current().nextInt(100) < DELAY_PERCENT) {
            delays.incrementAndGet();
            Thread.sleep(1 + ThreadLocalRandom.current().nextInt(MAX_DELAY_MILLIS));
          }
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // cut, or closed by either side
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        close(false);
      }
    }

    void close(boolean reset) {
      links.remove(this);
      if (reset) {
        for (Socket s : List.of(client, upstream)) {
          try {
            s.setSoLinger(true, 0); // RST, not FIN: the peer sees a connection reset
          } catch (IOException ignored) {
            // closed already
          }
        }
      }
      closeQuietly(client);
      closeQuietly(upstream);
    }
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // closing
    }
    for (Link link : List.copyOf(links)) {
      link.close(false);
    }
  }
}
