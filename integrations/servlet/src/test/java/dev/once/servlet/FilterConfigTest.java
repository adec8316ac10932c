package dev.once.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 25, item 3: the builder edits an {@link IdempotencyFilter.Config} of its own, and
 * {@code build()} and {@code toBuilder()} copy it whole, so a setting is one field of the config
 * (with its default, its copy, its getter) and one builder method.
 */
class FilterConfigTest {

  final Once once = Once.builder(new InMemoryStore()).build();
  final TenantResolver tenants = TenantResolver.header("X-Tenant");

  /** Every setting away from its default. */
  IdempotencyFilter.Builder everySetting() {
    return IdempotencyFilter.builder(once).methods("put").paths("/a/**").excludePaths("/a/b")
        .scope("orders").tenantResolver(tenants).keyHeader("X-Key").keyRequired(false)
        .replayHeaders("Location").neverStoreHeaders("X-Secret").storeServerErrors(true)
        .maxRequestBytes(10).maxResponseBytes(20).retryAfter(Duration.ofSeconds(3));
  }

  @Test
  void toBuilderCarriesEveryFieldOfTheConfig() throws Exception {
    IdempotencyFilter filter = everySetting().build();
    IdempotencyFilter.Config defaults = IdempotencyFilter.builder(once).build().config();

    IdempotencyFilter.Config copy = filter.toBuilder().build().config();

    int compared = 0;
    for (Field field : IdempotencyFilter.Config.class.getDeclaredFields()) {
      if (Modifier.isStatic(field.getModifiers())) {
        continue;
      }
      field.setAccessible(true);
      assertThat(field.get(copy)).as(field.getName()).isEqualTo(field.get(filter.config()));
      if (!field.getName().equals("once")) {
        // everySetting() sets every field, so a field it missed fails here, not in production.
        assertThat(field.get(copy)).as(field.getName() + " set away from its default")
            .isNotEqualTo(field.get(defaults));
      }
      compared++;
    }
    assertThat(compared).isEqualTo(14);
    assertThat(copy.once()).isSameAs(once);
    assertThat(copy.methods()).containsExactly("PUT");
    assertThat(copy.tenantResolver()).isSameAs(tenants);
    assertThat(copy.neverStored()).contains("x-secret", "set-cookie");
    assertThat(copy.maxResponseBytes()).isEqualTo(20);
    assertThat(filter.toBuilder().build().toString()).isEqualTo(filter.toString());
  }

  @Test
  void aBuilderChangedAfterBuildChangesNothingBuilt() {
    IdempotencyFilter.Builder builder = IdempotencyFilter.builder(once).scope("orders");
    IdempotencyFilter filter = builder.build();

    builder.scope("payments").paths("/other");
    IdempotencyFilter.Builder variant = filter.toBuilder().retryAfter(Duration.ofSeconds(9));

    assertThat(filter.config().scope()).isEqualTo("orders");
    assertThat(filter.config().paths()).isEqualTo(List.of("/**"));
    assertThat(filter.config().retryAfter()).isEqualTo(IdempotencyFilter.DEFAULT_RETRY_AFTER);
    assertThat(variant.build().config().retryAfter()).isEqualTo(Duration.ofSeconds(9));
    assertThat(variant.build().config().scope()).isEqualTo("orders");
  }

  @Test
  void theResponseBoundDefaultsToTheOncesPayloadBound() {
    Once small = Once.builder(new InMemoryStore()).maxPayloadBytes(4096).build();

    assertThat(IdempotencyFilter.builder(small).build().config().maxResponseBytes())
        .isEqualTo(4096);
  }
}
