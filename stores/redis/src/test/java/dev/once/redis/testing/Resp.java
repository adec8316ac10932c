package dev.once.redis.testing;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal RESP2 client for the launchers: one command per call on a fresh socket, so the
 * launchers need no Redis client library and work while a server is loading or half set up.
 * Strings are ISO-8859-1, so binary keys round-trip byte for byte.
 */
public final class Resp {

  private Resp() {}

  /** An error reply ({@code -ERR …}). */
  public static final class ErrorReply extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ErrorReply(String message) {
      super(message);
    }
  }

  /**
   * Sends one command to {@code host:port} and returns the reply: String (simple or bulk), Long,
   * List (array) or null.
   *
   * @throws ErrorReply          for an error reply
   * @throws UncheckedIOException if the server cannot be reached
   */
  public static Object call(String host, int port, String... args) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(host, port), 1000);
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      ByteArrayOutputStream command = new ByteArrayOutputStream();
      command.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      for (String arg : args) {
        byte[] bytes = arg.getBytes(StandardCharsets.ISO_8859_1);
        command.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        command.writeBytes(bytes);
        command.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
      }
      out.write(command.toByteArray());
      out.flush();
      return read(new BufferedInputStream(socket.getInputStream()));
    } catch (IOException e) {
      throw new UncheckedIOException("Redis at " + host + ":" + port + ": " + e.getMessage(), e);
    }
  }

  private static Object read(InputStream in) throws IOException {
    String line = line(in);
    char type = line.charAt(0);
    String rest = line.substring(1);
    switch (type) {
      case '+':
        return rest;
      case '-':
        throw new ErrorReply(rest);
      case ':':
        return Long.parseLong(rest);
      case '$': {
        int n = Integer.parseInt(rest);
        if (n < 0) {
          return null;
        }
        byte[] data = in.readNBytes(n + 2);
        return new String(data, 0, n, StandardCharsets.ISO_8859_1);
      }
      case '*': {
        int n = Integer.parseInt(rest);
        if (n < 0) {
          return null;
        }
        List<Object> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          items.add(read(in));
        }
        return items;
      }
      default:
        throw new IOException("unexpected RESP reply: " + line);
    }
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    int prev = -1;
    while (true) {
      int c = in.read();
      if (c < 0) {
        throw new IOException("connection closed");
      }
      if (prev == '\r' && c == '\n') {
        byte[] bytes = buf.toByteArray();
        return new String(bytes, 0, bytes.length - 1, StandardCharsets.ISO_8859_1);
      }
      buf.write(c);
      prev = c;
    }
  }
}
