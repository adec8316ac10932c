package dev.once.batch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BatchConfigTest {

  @Test
  void theDefaultsAreTheOnesDocumented() {
    BatchConfig d = BatchConfig.defaults();
    assertThat(d.maxAttempts()).isEqualTo(5);
    assertThat(d.initialBackoff()).isEqualTo(Duration.ofMillis(100));
    assertThat(d.maxBackoff()).isEqualTo(Duration.ofSeconds(5));
    assertThat(d.inProgressBackoff()).isEqualTo(Duration.ofSeconds(1));
    assertThat(d.noKeyPolicy()).isEqualTo(NoKeyPolicy.DEAD_LETTER);
    assertThat(d.batchClaims()).isTrue();
    assertThat(BatchConfig.builder().build()).isEqualTo(d).hasSameHashCodeAs(d);
  }

  @Test
  void toBuilderKeepsEverySettingAndChangesOnlyWhatIsSet() {
    BatchConfig custom = BatchConfig.builder().maxAttempts(2)
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(8))
        .inProgressBackoff(Duration.ofSeconds(30)).noKeyPolicy(NoKeyPolicy.PROCESS_UNPROTECTED)
        .batchClaims(false).build();

    assertThat(custom.toBuilder().build()).isEqualTo(custom);
    BatchConfig changed = custom.toBuilder().maxAttempts(7).build();
    assertThat(changed.maxAttempts()).isEqualTo(7);
    assertThat(changed.toBuilder().maxAttempts(2).build()).isEqualTo(custom);
    assertThat(custom).isNotEqualTo(BatchConfig.defaults());
    assertThat(custom.toString()).contains("maxAttempts=2", "PROCESS_UNPROTECTED");
  }

  @Test
  void toBuilderCopiesEveryFieldAndABuilderChangedLaterChangesNothingBuilt() throws Exception {
    BatchConfig.Builder builder = BatchConfig.builder().maxAttempts(2)
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(8))
        .inProgressBackoff(Duration.ofSeconds(30)).noKeyPolicy(NoKeyPolicy.PROCESS_UNPROTECTED)
        .batchClaims(false);
    BatchConfig custom = builder.build();
    BatchConfig copy = custom.toBuilder().build();
    builder.maxAttempts(9);
    custom.toBuilder().maxAttempts(8);

    int compared = 0;
    for (java.lang.reflect.Field field : BatchConfig.class.getDeclaredFields()) {
      if (java.lang.reflect.Modifier.isStatic(field.getModifiers())) {
        continue;
      }
      field.setAccessible(true);
      assertThat(field.get(copy)).as(field.getName()).isEqualTo(field.get(custom))
          .isNotEqualTo(field.get(BatchConfig.defaults()));
      compared++;
    }
    assertThat(compared).isEqualTo(6);
    assertThat(custom.maxAttempts()).isEqualTo(2);
  }

  @Test
  void backoffDoublesFromTheInitialUpToTheLongest() {
    BatchConfig c = BatchConfig.builder()
        .retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(5)).build();
    assertThat(c.backoff(1)).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.backoff(2)).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.backoff(3)).isEqualTo(Duration.ofSeconds(4));
    assertThat(c.backoff(4)).isEqualTo(Duration.ofSeconds(5));
    assertThat(c.backoff(1_000_000)).isEqualTo(Duration.ofSeconds(5));
  }
}
