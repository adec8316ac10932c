package dev.once.cli.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The demo's progress line on a loaded machine: a worker that stalled past its lease made the
 * engine log a warning through the line ({@code DemoProgressTest} failed under a load average of
 * 20). While held, Once's records reach no handler of the root logger, and are told in one line.
 */
class HeldLogTest {

  private final List<String> reachedRoot = new CopyOnWriteArrayList<>();
  private final Handler root = new Handler() {
    @Override
    public void publish(LogRecord record) {
      if (record.getLoggerName() != null && record.getLoggerName().startsWith("dev.once")) {
        reachedRoot.add(record.getMessage());
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void listenAtTheRoot() {
    Logger.getLogger("").addHandler(root);
  }

  @AfterEach
  void stopListening() {
    Logger.getLogger("").removeHandler(root);
  }

  private static void engineWarns(String key) {
    System.getLogger("dev.once.Once").log(System.Logger.Level.WARNING,
        "the lease on {0} passed before its work started; not started", key);
  }

  @Test
  void onceWarningsWhileHeldReachNoTerminalAndAreToldInOneLine() {
    try (HeldLog held = HeldLog.holdBack()) {
      engineWarns("payments/evt-207");
      engineWarns("payments/evt-275");

      assertThat(reachedRoot).isEmpty();
      assertThat(held.warnings()).isEqualTo(2);
      assertThat(held.summary()).isEqualTo("2 warnings from Once held back during the run, the"
          + " first: the lease on payments/evt-207 passed before its work started; not started");
    }
    engineWarns("payments/evt-300");
    assertThat(reachedRoot).as("released on close").hasSize(1);
  }

  @Test
  void nothingHeldSaysNothing() {
    try (HeldLog held = HeldLog.holdBack()) {
      System.getLogger("dev.once.Once").log(System.Logger.Level.INFO, "an info line");
      assertThat(held.summary()).isEmpty();
    }
  }
}
