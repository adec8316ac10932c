package dev.once.cli.support;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * A one-line progress bar on the terminal for work that takes more than a second: nothing is drawn
 * before a second has passed, nor when the output is not a terminal (a pipe, a file, a test), so
 * logs and captured output stay clean.
 *
 * <p>The line never wraps: it is cut to the terminal's width ({@code COLUMNS}, else what
 * {@code stty size} reports, else {@value #FALLBACK_COLUMNS} columns), because a wrapped line
 * cannot be redrawn in place with a carriage return.
 */
public final class Progress implements AutoCloseable {

  /** How long before the first draw; the system property {@value #DELAY_PROPERTY} overrides it. */
  static final long DELAY_MILLIS = 1_000;
  /** The system property setting how long before the first draw, in milliseconds (default 1 s). */
  public static final String DELAY_PROPERTY = "once.progress.delay-ms";
  static final long REDRAW_MILLIS = 200;
  /** The widest bar, on a wide terminal. */
  static final int MAX_BAR = 30;
  /** Narrower than this, the bar is left out and only the counts are drawn. */
  static final int MIN_BAR = 5;
  /** Assumed when the terminal's width cannot be found: narrow enough for any terminal in use. */
  static final int FALLBACK_COLUMNS = 40;

  private final Thread drawer;
  private final PrintStream out;
  private volatile boolean drawn;
  /** When the first draw is due (System.nanoTime), and what it draws; unused without a drawer. */
  private long firstDrawDue;
  private Runnable drawNow;

  private Progress(Thread drawer, PrintStream out) {
    this.drawer = drawer;
    this.out = out;
  }

  /**
   * Starts drawing {@code label} and {@code done()} out of {@code total} on stderr, if stderr is a
   * terminal; {@link #close()} stops and clears it. {@code done} counts the same things as
   * {@code total}, from 0 to {@code total}.
   */
  public static Progress start(String label, long total, LongSupplier done) {
    if (System.console() == null) {
      return new Progress(null, null);
    }
    PrintStream err = System.err;
    Progress[] self = new Progress[1];
    Thread drawer = new Thread(() -> {
      try {
        Thread.sleep(delayMillis());
        int columns = terminalColumns();
        while (!Thread.currentThread().isInterrupted()) {
          self[0].draw(line(label, done.getAsLong(), total, columns));
          Thread.sleep(REDRAW_MILLIS);
        }
      } catch (InterruptedException e) {
        // closed
      }
    }, "once-progress");
    drawer.setDaemon(true);
    self[0] = new Progress(drawer, err);
    self[0].firstDrawDue = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis());
    self[0].drawNow = () -> self[0].draw(line(label, done.getAsLong(), total, terminalColumns()));
    drawer.start();
    return self[0];
  }

  /**
   * The line drawn for {@code done} out of {@code total}: {@code label [####    ] done/total}, at
   * most {@code columns - 1} characters (the last column is left free: some terminals wrap when
   * it is written). A {@code done} outside [0, total] is drawn as the nearest bound.
   */
  static String line(String label, long done, long total, int columns) {
    long safeTotal = Math.max(0, total);
    long safeDone = Math.max(0, Math.min(safeTotal, done));
    String counts = safeDone + "/" + safeTotal;
    int room = Math.max(1, columns - 1);
    int bar = Math.min(MAX_BAR, room - label.length() - " [] ".length() - counts.length());
    String text;
    if (bar >= MIN_BAR) {
      int filled;
      if (safeTotal == 0) {
        filled = bar;
      } else if (safeDone <= Long.MAX_VALUE / bar) {
        filled = (int) (bar * safeDone / safeTotal);
      } else {
        // bar × done would overflow: only for counts no demo reaches, but never wrong.
        filled = (int) Math.min(bar, bar * (safeDone / (double) safeTotal));
      }
      text = label + " [" + "#".repeat(filled) + " ".repeat(bar - filled) + "] " + counts;
    } else if (label.length() + 1 + counts.length() <= room) {
      text = label + " " + counts;
    } else {
      // Too narrow for the label: the counts matter more.
      text = counts;
    }
    return text.length() <= room ? text : text.substring(0, room);
  }

  private void draw(String line) {
    // Clear the line first: a shorter line must not leave the end of the last one behind.
    out.print("\r\033[2K" + line);
    out.flush();
    drawn = true;
  }

  private static long delayMillis() {
    try {
      return Math.max(0, Long.parseLong(System.getProperty(DELAY_PROPERTY,
          Long.toString(DELAY_MILLIS))));
    } catch (NumberFormatException e) {
      return DELAY_MILLIS;
    }
  }

  /** The terminal's width: {@code COLUMNS}, else {@code stty size}, else the fallback. */
  static int terminalColumns() {
    Integer columns = parseColumns(System.getenv("COLUMNS"));
    if (columns != null) {
      return columns;
    }
    File tty = new File("/dev/tty");
    if (tty.exists()) {
      try {
        Process stty = new ProcessBuilder("stty", "size").redirectInput(tty)
            .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try (InputStream in = stty.getInputStream()) {
          String answer = new String(in.readNBytes(64), StandardCharsets.US_ASCII).strip();
          if (stty.waitFor(1, TimeUnit.SECONDS) && stty.exitValue() == 0) {
            // "rows columns"
            String[] parts = answer.split("\\s+");
            columns = parts.length == 2 ? parseColumns(parts[1]) : null;
            if (columns != null) {
              return columns;
            }
          }
        } finally {
          stty.destroy();
        }
      } catch (IOException e) {
        // no stty: the fallback
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return FALLBACK_COLUMNS;
  }

  /** A positive column count, or null for anything else (unset, 0 as a pty without size has). */
  static Integer parseColumns(String value) {
    if (value == null) {
      return null;
    }
    try {
      int n = Integer.parseInt(value.strip());
      return n > 0 ? n : null;
    } catch (NumberFormatException e) {
      return null;
    }
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
    if (!drawn && System.nanoTime() - firstDrawDue >= 0) {
      // The work outlasted the delay but the drawer never got to draw (it was still finding the
      // terminal's width on a busy machine): draw the last state once, as it would have.
      drawNow.run();
    }
    if (drawn) {
      out.print("\r\033[2K");
      out.flush();
    }
  }
}
