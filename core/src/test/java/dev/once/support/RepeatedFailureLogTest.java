package dev.once.support;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.StoreUnavailableException;
import java.time.Duration;
import java.util.List;
import java.util.ResourceBundle;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Issue 24: a store outage logged a full stack trace (79–103 lines) per request. Repeated
 * identical failures now log one stack trace, then a count per interval.
 */
class RepeatedFailureLogTest {

  /** What was logged: the message, and whether a stack trace came with it. */
  record Line(String message, boolean withTrace) {}

  private final List<Line> lines = new CopyOnWriteArrayList<>();
  private final AtomicLong nanos = new AtomicLong();
  private final RepeatedFailureLog log = RepeatedFailureLog.of(new System.Logger() {
    @Override
    public String getName() {
      return "test";
    }

    @Override
    public boolean isLoggable(Level level) {
      return true;
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
      lines.add(new Line(msg, thrown != null));
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
      lines.add(new Line(format, false));
    }
  }, Duration.ofMinutes(1), nanos::get);

  private void fail(Supplier<RuntimeException> failure, int times, Duration apart) {
    for (int i = 0; i < times; i++) {
      log.log(System.Logger.Level.WARNING, "store unavailable", failure.get());
      nanos.addAndGet(apart.toNanos());
    }
  }

  @Test
  void anOutageLogsOneStackTraceThenACountPerInterval() {
    Supplier<RuntimeException> down = () -> new StoreUnavailableException("connection refused",
        null);

    fail(down, 120, Duration.ofSeconds(1)); // two minutes of an outage, a request a second

    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).isEqualTo(new Line("store unavailable", true));
    assertThat(lines.get(1).withTrace()).isFalse();
    assertThat(lines.get(1).message()).contains("60 times in the last 60 s")
        .contains("connection refused");
  }

  @Test
  void anotherFailureAndAFailureBackAfterAQuietIntervalGetTheirStackTrace() {
    fail(() -> new StoreUnavailableException("connection refused", null), 3, Duration.ZERO);
    fail(() -> new IllegalStateException("schema missing"), 1, Duration.ZERO);
    nanos.addAndGet(Duration.ofMinutes(5).toNanos());
    fail(() -> new StoreUnavailableException("connection refused", null), 1, Duration.ZERO);

    assertThat(lines).extracting(Line::withTrace).containsExactly(true, true, true);
  }
}
