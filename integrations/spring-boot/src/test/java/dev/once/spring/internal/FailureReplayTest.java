package dev.once.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.IdempotencyKey;
import dev.once.KeyReusedException;
import dev.once.ReplayedFailureException;
import org.junit.jupiter.api.Test;

/** Which stored failures can be made again for the application's resolvers, and which not. */
class FailureReplayTest {

  private static final ClassLoader LOADER = FailureReplayTest.class.getClassLoader();

  @Test
  void anApplicationExceptionWithAStringConstructorIsMadeAgainWithItsMessage() {
    Exception remade = FailureReplay.remade(failure(Declined.class.getName(), "card declined"),
        LOADER);
    assertThat(remade).isExactlyInstanceOf(Declined.class).hasMessage("card declined");
    assertThat(FailureReplay.remade(failure(IllegalStateException.class.getName(), "x"), LOADER))
        .isExactlyInstanceOf(IllegalStateException.class).hasMessage("x");
  }

  @Test
  void whatCannotBeMadeAgainIsLeftToTheGenericAnswer() {
    assertThat(FailureReplay.remade(failure("com.example.Gone", "x"), LOADER)).isNull();
    assertThat(FailureReplay.remade(failure(NoMessage.class.getName(), "x"), LOADER)).isNull();
    assertThat(FailureReplay.remade(failure(KeyReusedException.class.getName(), "x"), LOADER))
        .as("Once's own exceptions answer themselves").isNull();
    assertThat(FailureReplay.remade(failure(AssertionError.class.getName(), "x"), LOADER))
        .as("an Error").isNull();
    assertThat(FailureReplay.remade(failure(Throwing.class.getName(), "x"), LOADER)).isNull();
  }

  private static ReplayedFailureException failure(String type, String message) {
    return new ReplayedFailureException(IdempotencyKey.of("orders", "o-1"), type, message);
  }

  static class Declined extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Declined(String message) {
      super(message);
    }
  }

  static class NoMessage extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  static class Throwing extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Throwing(String message) {
      throw new IllegalStateException("a constructor that fails: " + message);
    }
  }
}
