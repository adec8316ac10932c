package dev.once;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.FileNotFoundException;
import java.io.IOException;
import org.junit.jupiter.api.Test;

class FailurePolicyTest {

  @Test
  void retryableUnlessARuleSaysTerminal() {
    FailurePolicy policy = FailurePolicy.retryAll()
        .terminalOn(FileNotFoundException.class)
        .terminalIf(e -> "fatal".equals(e.getMessage()));

    assertThat(FailurePolicy.retryAll().isTerminal(new IllegalStateException())).isFalse();
    assertThat(policy.isTerminal(new FileNotFoundException())).isTrue();
    assertThat(policy.isTerminal(new IOException())).isFalse();
    assertThat(policy.isTerminal(new IOException("fatal"))).isTrue();
  }

  @Test
  void isImmutable() {
    FailurePolicy base = FailurePolicy.retryAll();
    base.terminalOn(IOException.class);
    assertThat(base.isTerminal(new IOException())).isFalse();
  }
}
