package dev.once.jaxrs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.InMemoryStore;
import dev.once.Once;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The builder refuses what the servlet filter's refuses, and carries every setting over. */
class IdempotencyFeatureBuilderTest {

  final Once once = Once.builder(new InMemoryStore()).build();

  @Test
  void refusesWhatCannotWork() {
    IdempotencyFeature.Builder builder = IdempotencyFeature.builder(once);
    assertThatThrownBy(() -> builder.replayHeaders("Content-Length"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.replayHeaders("Set-Cookie"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.paths("payments")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.methods("PO ST")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.maxResponseBytes(0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder.abandonAfter(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> IdempotencyFeature.builder(once).replayHeaders("X-Secret")
        .neverStoreHeaders("x-secret").build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(IdempotencyFeature::of).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void toBuilderCarriesEverySettingOver() {
    IdempotencyFeature feature = IdempotencyFeature.builder(once).methods("post", "put")
        .paths("/a/**").excludePaths("/a/open").scope("svc").keyHeader("X-Key")
        .keyRequired(false).storeServerErrors(true).maxRequestBytes(10).maxResponseBytes(20)
        .retryAfter(Duration.ofSeconds(3)).abandonAfter(Duration.ofMinutes(1)).build();

    IdempotencyFeature copy = feature.toBuilder().build();

    assertThat(copy.config().toString()).isEqualTo(feature.config().toString());
    assertThat(copy.config().methods()).containsExactly("POST", "PUT");
    assertThat(copy.config().abandonAfter()).isEqualTo(Duration.ofMinutes(1));
    assertThat(copy.config().maxResponseBytes()).isEqualTo(20);
  }
}
