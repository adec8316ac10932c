package dev.once.servlet.internal;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * The response as the application writes it, passed straight through to the client (nothing is
 * delayed) while a copy of the body is kept, up to a bound, to be stored for replays.
 *
 * <p>The application may use {@link #getOutputStream()} or {@link #getWriter()} (not both, as the
 * Servlet specification says); the writer encodes in the response's character encoding, which it
 * fixes on the response like the container would. {@code resetBuffer}, {@code reset} and a
 * clearing {@code sendRedirect} discard the copy along with the container's buffer.
 * {@code sendError} is recorded: the container renders that error page after the filter has
 * returned, so such a response cannot be captured.
 */
public final class CapturingResponse extends HttpServletResponseWrapper {

  private final int limit;
  private ByteArrayOutputStream copy = new ByteArrayOutputStream();
  private boolean overflowed;
  private boolean errorSent;
  private TeeStream stream;
  private PrintWriter writer;
  private boolean usingStream;

  public CapturingResponse(HttpServletResponse response, int limit) {
    super(response);
    this.limit = limit;
  }

  @Override
  public ServletOutputStream getOutputStream() throws IOException {
    if (writer != null) {
      throw new IllegalStateException("getWriter() was already called on this response");
    }
    usingStream = true;
    return tee();
  }

  @Override
  public PrintWriter getWriter() throws IOException {
    if (usingStream) {
      throw new IllegalStateException("getOutputStream() was already called on this response");
    }
    if (writer == null) {
      String encoding = getCharacterEncoding();
      // Fix the charset on the response as the container's own getWriter() does, so the
      // Content-Type sent (and stored) names the encoding the bytes are in.
      setCharacterEncoding(encoding);
      writer = new PrintWriter(new OutputStreamWriter(tee(), charset(encoding)), false);
    }
    return writer;
  }

  private TeeStream tee() throws IOException {
    if (stream == null) {
      stream = new TeeStream(super.getOutputStream());
    }
    return stream;
  }

  @Override
  public void flushBuffer() throws IOException {
    if (writer != null) {
      writer.flush();
    }
    super.flushBuffer();
  }

  @Override
  public void resetBuffer() {
    flushWriter();
    super.resetBuffer();
    discardCopy();
  }

  @Override
  public void reset() {
    flushWriter();
    super.reset();
    discardCopy();
  }

  @Override
  public void sendError(int sc, String msg) throws IOException {
    errorSent = true;
    super.sendError(sc, msg);
  }

  @Override
  public void sendError(int sc) throws IOException {
    errorSent = true;
    super.sendError(sc);
  }

  @Override
  public void sendRedirect(String location) throws IOException {
    sendRedirect(location, HttpServletResponse.SC_FOUND, true);
  }

  @Override
  public void sendRedirect(String location, int sc) throws IOException {
    sendRedirect(location, sc, true);
  }

  @Override
  public void sendRedirect(String location, boolean clearBuffer) throws IOException {
    sendRedirect(location, HttpServletResponse.SC_FOUND, clearBuffer);
  }

  @Override
  public void sendRedirect(String location, int sc, boolean clearBuffer) throws IOException {
    if (clearBuffer) {
      flushWriter();
      discardCopy();
    }
    super.sendRedirect(location, sc, clearBuffer);
  }

  /** Pushes whatever the application's writer still holds; call once the application returned. */
  public void finish() {
    flushWriter();
  }

  /** Whether the application called {@code sendError}. */
  public boolean errorSent() {
    return errorSent;
  }

  /** Whether the body outgrew the bound, so no copy is kept. */
  public boolean overflowed() {
    return overflowed;
  }

  /** The body written so far; empty after an overflow. */
  public byte[] body() {
    return overflowed ? new byte[0] : copy.toByteArray();
  }

  private void flushWriter() {
    if (writer != null) {
      writer.flush();
    }
  }

  private void discardCopy() {
    if (!overflowed) {
      copy.reset();
    }
  }

  private void keep(byte[] b, int off, int len) {
    if (overflowed) {
      return;
    }
    if (copy.size() + (long) len > limit) {
      overflowed = true;
      copy = null;
      return;
    }
    copy.write(b, off, len);
  }

  private static Charset charset(String encoding) {
    try {
      return encoding == null ? StandardCharsets.ISO_8859_1 : Charset.forName(encoding);
    } catch (RuntimeException unknown) {
      return StandardCharsets.ISO_8859_1;
    }
  }

  /** Writes through to the container's stream and keeps a copy. */
  private final class TeeStream extends ServletOutputStream {
    private final ServletOutputStream out;
    private final byte[] one = new byte[1];

    TeeStream(ServletOutputStream out) {
      this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      one[0] = (byte) b;
      keep(one, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      keep(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      out.flush();
    }

    @Override
    public void close() throws IOException {
      out.close();
    }

    @Override
    public boolean isReady() {
      return out.isReady();
    }

    @Override
    public void setWriteListener(WriteListener listener) {
      throw new IllegalStateException("async I/O is not supported on an idempotent route");
    }
  }
}
