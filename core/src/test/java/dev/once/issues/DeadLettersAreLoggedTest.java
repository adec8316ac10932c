package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 24: the consumers logged only the no-key case; a message given up on (a terminal
 * failure, retries exhausted) left no log line, only dead-letter headers. The engine, under every
 * adapter, now says it at WARN with the key, the reason and the attempt.
 */
class DeadLettersAreLoggedTest {

  record Msg(String key) {}

  private final Logger engineLog = Logger.getLogger("dev.once.internal.BatchEngine");
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord record) {
      records.add(record);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void listen() {
    engineLog.addHandler(handler);
  }

  @AfterEach
  void stopListening() {
    engineLog.removeHandler(handler);
  }

  @Test
  void aMessageGivenUpOnIsLoggedAtWarnWithItsKeyReasonAndAttempt() {
    Once once = Once.builder(new InMemoryStore())
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      throw new IllegalArgumentException("card declined");
    }).scope("payments").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .deadLetters(letter -> {}).build();

    executor.process(List.of(new Msg("pay-7")));

    assertThat(records).filteredOn(r -> r.getLevel() == Level.WARNING)
        .extracting(r -> java.text.MessageFormat.format(r.getMessage(), r.getParameters()))
        .anySatisfy(line -> assertThat(line).contains("payments/pay-7")
            .contains("TERMINAL_FAILURE").contains("attempt 1").contains("card declined"));
  }
}
