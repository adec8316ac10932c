package dev.once.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * As the servlet filter's: the builder edits an {@link IdempotencyWebFilter.Config} of its own, and
 * {@code build()} and {@code toBuilder()} copy it whole, so a setting is one field of the config
 * (with its default, its copy, its getter) and one builder method.
 */
class WebFilterConfigTest {

  final Once once = Once.builder(new InMemoryStore()).build();
  final TenantResolver tenants = TenantResolver.header("X-Tenant");

  /** Every setting away from its default. */
  IdempotencyWebFilter.Builder everySetting() {
    return IdempotencyWebFilter.builder(once).methods("put").paths("/a/**").excludePaths("/a/b")
        .scope("orders").tenantResolver(tenants).keyHeader("X-Key").keyRequired(false)
        .replayHeaders("Location").neverStoreHeaders("X-Secret").storeServerErrors(true)
        .maxRequestBytes(10).maxResponseBytes(20).retryAfter(Duration.ofSeconds(3));
  }

  @Test
  void toBuilderCarriesEveryFieldOfTheConfig() throws Exception {
    IdempotencyWebFilter filter = everySetting().build();
    IdempotencyWebFilter.Config defaults = IdempotencyWebFilter.builder(once).build().config();

    IdempotencyWebFilter.Config copy = filter.toBuilder().build().config();

    int compared = 0;
    for (Field field : IdempotencyWebFilter.Config.class.getDeclaredFields()) {
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
    IdempotencyWebFilter.Builder builder = IdempotencyWebFilter.builder(once).scope("orders");
    IdempotencyWebFilter filter = builder.build();

    builder.scope("payments").paths("/other");
    IdempotencyWebFilter.Builder variant = filter.toBuilder().retryAfter(Duration.ofSeconds(9));

    assertThat(filter.config().scope()).isEqualTo("orders");
    assertThat(filter.config().paths()).isEqualTo(List.of("/**"));
    assertThat(filter.config().retryAfter()).isEqualTo(IdempotencyWebFilter.DEFAULT_RETRY_AFTER);
    assertThat(variant.build().config().retryAfter()).isEqualTo(Duration.ofSeconds(9));
    assertThat(variant.build().config().scope()).isEqualTo("orders");
  }

  @Test
  void theResponseBoundDefaultsToTheOncesPayloadBound() {
    Once small = Once.builder(new InMemoryStore()).maxPayloadBytes(4096).build();

    assertThat(IdempotencyWebFilter.builder(small).build().config().maxResponseBytes())
        .isEqualTo(4096);
  }

  @Test
  void itsSettingsAreTheServletFiltersSettingForSetting() {
    // The same settings, defaults and meanings: a configuration moves from one to the other.
    List<String> servlet = java.util.Arrays.stream(
            dev.once.servlet.IdempotencyFilter.Builder.class.getDeclaredMethods())
        .filter(m -> Modifier.isPublic(m.getModifiers()))
        .map(m -> m.getName() + java.util.Arrays.toString(m.getParameterTypes()))
        .filter(m -> !m.startsWith("tenantResolver")).sorted().toList();
    List<String> webflux = java.util.Arrays.stream(
            IdempotencyWebFilter.Builder.class.getDeclaredMethods())
        .filter(m -> Modifier.isPublic(m.getModifiers()))
        .map(m -> m.getName() + java.util.Arrays.toString(m.getParameterTypes())
            .replace("IdempotencyWebFilter", "IdempotencyFilter").replace("webflux", "servlet"))
        .filter(m -> !m.startsWith("tenantResolver")).sorted().toList();

    assertThat(webflux).isEqualTo(servlet);
    IdempotencyWebFilter.Config ours = IdempotencyWebFilter.builder(once).build().config();
    dev.once.servlet.IdempotencyFilter.Config theirs =
        dev.once.servlet.IdempotencyFilter.builder(once).build().config();
    assertThat(ours.toString().replace("IdempotencyWebFilter", "IdempotencyFilter"))
        .isEqualTo(theirs.toString());
  }
}
