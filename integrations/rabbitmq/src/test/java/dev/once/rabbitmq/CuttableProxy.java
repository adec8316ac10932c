package dev.once.rabbitmq;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy in front of the broker whose connections the test can cut: both sides' sockets are
 * closed, as a network failure would, so the client sees its connection lost (not closed by the
 * application) and the broker sees its peer gone. New connections are accepted after a cut.
 */
final class CuttableProxy implements AutoCloseable {

  private final ServerSocket server;
  private final String host;
  private final int port;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  CuttableProxy(String host, int port) throws IOException {
    this.host = host;
    this.port = port;
    this.server = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
    Thread acceptor = new Thread(this::accept, "proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return server.getLocalPort();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(host, port);
        sockets.add(client);
        sockets.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        // closed, or the broker refused: the client sees its connection fail
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        for (int n; (n = in.read(buffer)) >= 0; ) {
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // cut
      } finally {
        close(from);
        close(to);
      }
    }, "proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  /** Cuts every connection through the proxy. */
  void cutAll() {
    for (Socket s : sockets) {
      close(s);
    }
    sockets.clear();
  }

  private static void close(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // already gone
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    cutAll();
  }
}
