package dev.once.testkit;

import static dev.once.testkit.OnceAssertions.assertThatKey;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import org.junit.jupiter.api.Test;

/** The kit's assertions fail where they must: an assertion that cannot fail proves nothing. */
class OnceAssertionsTest {

  @Test
  void theStepsNamedAreReadExactlyFromTheStoredFailure() {
    String both = "address rejected (compensated: charge, reserve; NOT compensated: mail)";
    assertThat(OnceAssertions.KeyAssert.named(both, "compensated: "))
        .containsExactly("charge", "reserve");
    assertThat(OnceAssertions.KeyAssert.named(both, "NOT compensated: ")).containsExactly("mail");
    assertThat(OnceAssertions.KeyAssert.named("x (NOT compensated: charge)", "compensated: "))
        .isEmpty();
    assertThat(OnceAssertions.KeyAssert.named("no steps (at all)", "compensated: ")).isEmpty();
    assertThat(OnceAssertions.KeyAssert.named(null, "compensated: ")).isEmpty();
  }

  @Test
  void compensatedFailsOnAStepLeftUncompensatedAndOnAPartialList() throws Exception {
    OnceRecorder recorder = new OnceRecorder();
    Once once = Once.builder(new InMemoryStore()).listener(recorder)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    IdempotencyKey notUndone = IdempotencyKey.of("orders", "o-1");
    IdempotencyKey undone = IdempotencyKey.of("orders", "o-2");
    fail(once, notUndone, "address rejected (NOT compensated: charge)");
    fail(once, undone, "address rejected (compensated: charge, reserve)");

    assertThatThrownBy(() -> assertThatKey(once, recorder, notUndone).compensated("charge"))
        .isInstanceOf(AssertionError.class);
    assertThatKey(once, recorder, notUndone).notCompensated("charge");
    assertThatThrownBy(() -> assertThatKey(once, recorder, undone).compensated("charge"))
        .isInstanceOf(AssertionError.class);
    assertThatThrownBy(() -> assertThatKey(once, recorder, undone).notCompensated("charge"))
        .isInstanceOf(AssertionError.class);
    assertThatKey(once, recorder, undone).compensated("charge", "reserve");
  }

  private static void fail(Once once, IdempotencyKey key, String message) {
    assertThatThrownBy(() -> once.execute(key, Fingerprint.of(key.key()), Codecs.utf8(), a -> {
      throw new IllegalArgumentException(message);
    })).isInstanceOf(IllegalArgumentException.class);
  }

}
