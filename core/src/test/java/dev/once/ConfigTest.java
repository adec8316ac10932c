package dev.once;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Issue 25: a setting of {@link Once} was written in four places (the builder's field, the
 * config's field and constructor, its getter, and a hand-written copy in {@code toBuilder()}),
 * where one forgotten line loses it. The builder now edits a {@link Once.Config} of its own and
 * {@code build()} and {@code toBuilder()} copy it whole: a setting is a field of the config with
 * its default, a getter and a builder method, and nothing copies it by hand.
 */
class ConfigTest {

  private static final Step<String> CHARGE = Step.of("charge", Codecs.utf8())
      .compensate((r, k) -> { });

  @Test
  void toBuilderCarriesEverySettingOfTheConfig() throws Exception {
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(7))
        .retention(Duration.ofHours(3)).onInProgress(InProgressPolicy.waitUpTo(
            Duration.ofSeconds(2))).failurePolicy(FailurePolicy.retryAll()
            .terminalOn(IllegalStateException.class)).maxPayloadBytes(1234)
        .clock(new ManualClock()).ticker(() -> 42L).sleeper(d -> { })
        .listener(new OnceListener() { })
        .heartbeat((task, period) -> () -> { }).clockSkewMargin(Duration.ofSeconds(1))
        .coalesceStoreCalls(3).steps(CHARGE).compensationAttempts(7).build();

    Once copy = once.toBuilder().build();

    int compared = 0;
    for (Field field : Once.Config.class.getDeclaredFields()) {
      if (Modifier.isStatic(field.getModifiers())) {
        continue;
      }
      field.setAccessible(true);
      assertThat(field.get(copy.config())).as(field.getName())
          .isEqualTo(field.get(once.config()));
      compared++;
    }
    assertThat(compared).isGreaterThanOrEqualTo(15);
    assertThat(copy.config().ticker().getAsLong()).isEqualTo(42L);
    assertThat(copy.config().step("charge")).containsSame(CHARGE);
    assertThat(copy.config().compensationAttempts()).isEqualTo(7);
  }

  @Test
  void aBuilderChangedAfterBuildChangesNothingBuilt() {
    Once.Builder builder = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(7));
    Once once = builder.build();

    builder.lease(Duration.ofSeconds(9)).steps(CHARGE);

    assertThat(once.config().lease()).isEqualTo(Duration.ofSeconds(7));
    assertThat(once.config().step("charge")).isEmpty();
  }

  @Test
  void toBuilderEditsACopyAndLeavesTheBuiltConfigAsItIs() {
    Step<String> refund = Step.of("refund", Codecs.utf8()).compensate((r, k) -> { });
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(7)).steps(CHARGE)
        .build();

    Once variant = once.toBuilder().lease(Duration.ofSeconds(9)).steps(refund).build();

    assertThat(once.config().lease()).isEqualTo(Duration.ofSeconds(7));
    assertThat(once.config().step("refund")).isEmpty();
    assertThat(variant.config().lease()).isEqualTo(Duration.ofSeconds(9));
    assertThat(variant.config().step("charge")).containsSame(CHARGE);
    assertThat(variant.config().step("refund")).containsSame(refund);
  }
}
