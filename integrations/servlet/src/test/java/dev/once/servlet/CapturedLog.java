package dev.once.servlet;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** Collects what the filter logs (System.Logger goes to java.util.logging by default). */
final class CapturedLog extends Handler implements AutoCloseable {

  private final Logger logger = Logger.getLogger(IdempotencyFilter.class.getName());
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();

  CapturedLog() {
    logger.addHandler(this);
  }

  /** The messages logged at WARNING or above. */
  List<String> warnings() {
    return records.stream().filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue())
        .map(LogRecord::getMessage).toList();
  }

  @Override
  public void publish(LogRecord record) {
    records.add(record);
  }

  @Override
  public void flush() {}

  @Override
  public void close() {
    logger.removeHandler(this);
  }
}
