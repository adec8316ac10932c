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
 * The response as the application writes it, held back from the client until the filter has
 * stored the outcome ({@link #sendHeldBody()}): no byte leaves before the record is complete, so
 * a client that hangs up mid-answer and retries gets the replay, and a retry sent the moment the
 * answer arrives never finds the key in progress.
 *
 * <p>The body is buffered up to {@code limit} bytes, the most the filter stores. A larger body
 * overflows: what was buffered goes to the client, then the rest streams through as written
 * (it will not be stored anyway). From then on a failed write to the client is swallowed and
 * remembered ({@link #clientGone()}) instead of thrown at the application: the client leaving
 * must not look like a failure of the work.
 *
 * <p>The application may use {@link #getOutputStream()} or {@link #getWriter()} (not both, as the
 * Servlet specification says); the writer encodes in the response's character encoding, which it
 * fixes on the response like the container would. {@code flushBuffer} commits nothing while the
 * body is held. {@code resetBuffer}, {@code reset}, {@code sendError} and a clearing
 * {@code sendRedirect} discard the held body along with the container's buffer. {@code sendError}
 * is recorded: the container renders that error page after the filter returned, so such a
 * response cannot be captured.
 */
public final class CapturingResponse extends HttpServletResponseWrapper {

  private final int limit;
  private final ByteArrayOutputStream held = new ByteArrayOutputStream();
  private boolean overflowed;
  private boolean clientGone;
  private boolean errorSent;
  private HoldingStream stream;
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
    return stream();
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
      writer = new PrintWriter(new OutputStreamWriter(stream(), charset(encoding)), false);
    }
    return writer;
  }

  private HoldingStream stream() {
    if (stream == null) {
      stream = new HoldingStream();
    }
    return stream;
  }

  @Override
  public void flushBuffer() throws IOException {
    flushWriter();
    if (overflowed && !clientGone) {
      try {
        super.flushBuffer();
      } catch (IOException e) {
        clientGone = true;
      }
    }
  }

  @Override
  public void resetBuffer() {
    flushWriter();
    super.resetBuffer();
    held.reset();
  }

  @Override
  public void reset() {
    flushWriter();
    super.reset();
    held.reset();
  }

  @Override
  public void sendError(int sc, String msg) throws IOException {
    errorSent = true;
    held.reset();
    super.sendError(sc, msg);
  }

  @Override
  public void sendError(int sc) throws IOException {
    errorSent = true;
    held.reset();
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
      held.reset();
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

  /** Whether the body outgrew the bound, so it streamed to the client and no copy is kept. */
  public boolean overflowed() {
    return overflowed;
  }

  /** Whether a write to the client failed (it hung up) while the body streamed past the bound. */
  public boolean clientGone() {
    return clientGone;
  }

  /** The body held back; empty after an overflow. */
  public byte[] body() {
    return overflowed ? new byte[0] : held.toByteArray();
  }

  /**
   * Sends the held body to the client: call once the outcome is stored, or once the filter
   * decided not to store it. Does nothing after an overflow (the body already streamed).
   *
   * @throws IOException if the client is gone; the caller logs it, it changes nothing stored
   */
  public void sendHeldBody() throws IOException {
    if (overflowed || held.size() == 0) {
      return;
    }
    ServletOutputStream out = super.getOutputStream();
    held.writeTo(out); // no copy of a body of up to maxResponseBytes
    held.reset();
    out.flush();
  }

  private void flushWriter() {
    if (writer != null) {
      writer.flush();
    }
  }

  /** Past the bound: what was held goes out, then every later write streams through. */
  private void overflow() throws IOException {
    overflowed = true;
    byte[] prefix = held.toByteArray();
    held.reset();
    passThrough(prefix, 0, prefix.length);
  }

  private void passThrough(byte[] b, int off, int len) {
    if (clientGone || len == 0) {
      return;
    }
    try {
      super.getOutputStream().write(b, off, len);
    } catch (IOException e) {
      clientGone = true;
    }
  }

  private static Charset charset(String encoding) {
    try {
      return encoding == null ? StandardCharsets.ISO_8859_1 : Charset.forName(encoding);
    } catch (RuntimeException unknown) {
      return StandardCharsets.ISO_8859_1;
    }
  }

  /** Holds what the application writes, up to the bound; past it, streams to the client. */
  private final class HoldingStream extends ServletOutputStream {
    private final byte[] one = new byte[1];

    @Override
    public void write(int b) throws IOException {
      one[0] = (byte) b;
      write(one, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (!overflowed && held.size() + (long) len > limit) {
        overflow();
      }
      if (overflowed) {
        passThrough(b, off, len);
      } else {
        held.write(b, off, len);
      }
    }

    @Override
    public void flush() {
      // Held bytes stay held until the outcome is stored; streamed ones are flushed by the
      // container when the response completes.
    }

    @Override
    public void close() {
      // Closing would commit the response before the outcome is stored; the container closes it.
    }

    @Override
    public boolean isReady() {
      return true;
    }

    @Override
    public void setWriteListener(WriteListener listener) {
      throw new IllegalStateException("async I/O is not supported on an idempotent route");
    }
  }
}
