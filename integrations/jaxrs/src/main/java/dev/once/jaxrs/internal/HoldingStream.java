package dev.once.jaxrs.internal;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * Holds what the application writes, up to {@code limit} bytes, until the outcome is stored
 * ({@link #sendHeld()}); past the bound, what was held goes to the client, then every later write
 * streams through (it will not be stored anyway). From then on a failed write to the client is
 * swallowed and remembered ({@link #clientGone()}) instead of thrown at the application: the
 * client leaving must not look like a failure of the work. {@code flush} and {@code close} never
 * reach the client while the body is held.
 */
public final class HoldingStream extends OutputStream {

  private final OutputStream client;
  private final int limit;
  private final ByteArrayOutputStream held = new ByteArrayOutputStream();
  private boolean overflowed;
  private boolean clientGone;

  /** Holds up to {@code limit} bytes before {@code client}. */
  public HoldingStream(OutputStream client, int limit) {
    this.client = client;
    this.limit = limit;
  }

  @Override
  public void write(int b) throws IOException {
    write(new byte[] {(byte) b}, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (!overflowed && held.size() + (long) len > limit) {
      overflowed = true;
      byte[] prefix = held.toByteArray();
      held.reset();
      passThrough(prefix, 0, prefix.length);
    }
    if (overflowed) {
      passThrough(b, off, len);
    } else {
      held.write(b, off, len);
    }
  }

  private void passThrough(byte[] b, int off, int len) {
    if (clientGone || len == 0) {
      return;
    }
    try {
      client.write(b, off, len);
    } catch (IOException e) {
      clientGone = true;
    }
  }

  @Override
  public void flush() {
    if (overflowed && !clientGone) {
      try {
        client.flush();
      } catch (IOException e) {
        clientGone = true;
      }
    }
  }

  @Override
  public void close() {
    // Closing would send the response before the outcome is stored; the runtime closes it.
  }

  /** Whether the body outgrew the bound, so it streamed to the client and no copy is kept. */
  public boolean overflowed() {
    return overflowed;
  }

  /** Whether a write to the client failed while the body streamed past the bound. */
  public boolean clientGone() {
    return clientGone;
  }

  /** The body held back; empty after an overflow. */
  public byte[] body() {
    return overflowed ? new byte[0] : held.toByteArray();
  }

  /**
   * Sends the held body to the client: once the outcome is stored, or once it will not be.
   *
   * @throws IOException if the client is gone; it changes nothing stored
   */
  public void sendHeld() throws IOException {
    if (overflowed || held.size() == 0) {
      return;
    }
    held.writeTo(client);
    held.reset();
    client.flush();
  }
}
