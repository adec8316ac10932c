package dev.once.cli.support;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Holds back what Once's own loggers ({@code dev.once}) write while a progress line is drawn, so a
 * warning never breaks the line, and counts it for one line after. The demo provokes crashes and
 * takeovers on purpose, and on a loaded machine a worker may stall past its lease before its work
 * starts (the engine then refuses to start it and says so): expected there, and worth one line,
 * not a log record through the terminal.
 */
public final class HeldLog implements AutoCloseable {

  private static final String ENGINE = "dev.once";

  private final Logger logger = Logger.getLogger(ENGINE);
  private final boolean usedParents;
  private final AtomicInteger warnings = new AtomicInteger();
  private final AtomicReference<String> first = new AtomicReference<>();
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord record) {
      if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
        warnings.incrementAndGet();
        if (first.get() == null) {
          first.compareAndSet(null, new SimpleFormatter().formatMessage(record));
        }
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  private HeldLog() {
    usedParents = logger.getUseParentHandlers();
    logger.addHandler(handler);
    logger.setUseParentHandlers(false);
  }

  /** Holds back Once's log records until {@link #close}. */
  public static HeldLog holdBack() {
    return new HeldLog();
  }

  /** How many warnings (or worse) were held back. */
  public int warnings() {
    return warnings.get();
  }

  /**
   * One line saying what was held back, or empty when nothing was: the count and the first
   * warning's message.
   */
  public String summary() {
    int n = warnings.get();
    if (n == 0) {
      return "";
    }
    String message = first.get();
    return n + " warning" + (n == 1 ? "" : "s") + " from Once held back during the run"
        + (message == null ? "" : ", the first: " + message.replace('\n', ' '));
  }

  /** Once's log records go where they went before. */
  @Override
  public void close() {
    logger.removeHandler(handler);
    logger.setUseParentHandlers(usedParents);
  }
}
