package dev.once.cli;

import java.io.PrintStream;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * A one-line progress bar on the terminal for work that takes more than a second: nothing is drawn
 * before a second has passed, nor when the output is not a terminal (a pipe, a file, a test), so
 * logs and captured output stay clean.
 */
final class Progress implements AutoCloseable {

  static final long DELAY_MILLIS = 1_000;
  static final long REDRAW_MILLIS = 200;
  private static final int WIDTH = 30;

  private final Thread drawer;
  private final PrintStream out;
  private volatile boolean drawn;

  private Progress(Thread drawer, PrintStream out) {
    this.drawer = drawer;
    this.out = out;
  }

  /**
   * Starts drawing {@code label} and {@code done()} out of {@code total} on stderr, if stderr is a
   * terminal; {@link #close()} stops and clears it.
   */
  static Progress start(String label, long total, LongSupplier done) {
    if (System.console() == null) {
      return new Progress(null, null);
    }
    PrintStream err = System.err;
    Progress[] self = new Progress[1];
    Thread drawer = new Thread(() -> {
      try {
        Thread.sleep(DELAY_MILLIS);
        while (!Thread.currentThread().isInterrupted()) {
          self[0].draw(label, Math.min(total, done.getAsLong()), total);
          Thread.sleep(REDRAW_MILLIS);
        }
      } catch (InterruptedException e) {
        // closed
      }
    }, "once-progress");
    drawer.setDaemon(true);
    self[0] = new Progress(drawer, err);
    drawer.start();
    return self[0];
  }

  private void draw(String label, long done, long total) {
    int filled = total == 0 ? WIDTH : (int) (WIDTH * done / total);
    out.printf(Locale.ROOT, "\r%s [%s%s] %d/%d", label, "#".repeat(filled),
        " ".repeat(WIDTH - filled), done, total);
    out.flush();
    drawn = true;
  }

  @Override
  public void close() {
    if (drawer == null) {
      return;
    }
    drawer.interrupt();
    try {
      drawer.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (drawn) {
      out.print("\r\033[2K");
      out.flush();
    }
  }
}
