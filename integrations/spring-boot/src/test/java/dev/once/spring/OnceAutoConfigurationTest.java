package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.micrometer.MicrometerOnceListener;
import dev.once.micrometer.ObservationOnceListener;
import dev.once.micrometer.OnceObservations;
import dev.once.micrometer.OnceMetrics;
import dev.once.servlet.IdempotencyFilter;
import dev.once.spring.internal.OrderedWebFilter;
import dev.once.webflux.IdempotencyWebFilter;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.servlet.FilterRegistrationBean;

/** The auto-configuration's beans, from properties and the context, with real databases. */
@ExtendWith(OutputCaptureExtension.class)
class OnceAutoConfigurationTest {

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class));

  /**
   * Issue 24: with no DataSource and no Lettuce client the starter fell back to the in-memory
   * store with one WARN: a service with several instances silently had no idempotency between
   * them. The startup now fails, naming the fix; {@code once.store=memory} asks for memory.
   */
  @Test
  void withoutAStoreTheStartupFailsNamingTheFix() {
    runner.run(context -> assertThat(context.getStartupFailure()).isNotNull()
        .hasRootCauseInstanceOf(dev.once.spring.internal.OnceStartupException.class)
        .rootCause().hasMessageContaining("no idempotency store"));
    runner.withPropertyValues("once.store=memory").run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(context.getBean(IdempotencyStore.class)).isInstanceOf(InMemoryStore.class);
      assertThat(context.getBean(Once.class).store()).isSameAs(context.getBean(IdempotencyStore.class));
    });
  }

  @Test
  void memoryChosenExplicitlyDoesNotWarn(CapturedOutput output) {
    runner.withBean(DataSource.class, TestDatabases::sqlite)
        .withPropertyValues("once.store=memory")
        .run(context -> assertThat(context.getBean(IdempotencyStore.class))
            .isInstanceOf(InMemoryStore.class));
    assertThat(output).doesNotContain("Once uses an in-memory idempotency store");
  }

  @Test
  void aDataSourceMakesAJdbcStoreWithTheDialectDetected() {
    runner.withBean(DataSource.class, TestDatabases::sqlite)
        .withPropertyValues("once.jdbc.create-schema=true", "once.jdbc.table=spring_records")
        .run(context -> {
          JdbcStore store = (JdbcStore) context.getBean(IdempotencyStore.class);
          assertThat(store.dialect()).isEqualTo(JdbcDialect.SQLITE);
          assertThat(store.table()).isEqualTo("spring_records");
          assertThat(tables(context.getBean(DataSource.class))).contains("spring_records");
          Once once = context.getBean(Once.class);
          assertThat(once.run(IdempotencyKey.of("s", "k"), Fingerprint.of("x"), a -> { })).isTrue();
          assertThat(once.run(IdempotencyKey.of("s", "k"), Fingerprint.of("x"), a -> { })).isFalse();
        });
  }

  @Test
  void theSchemaIsNeverCreatedUnlessAskedFor() {
    runner.withBean(DataSource.class, TestDatabases::sqlite)
        .run(context -> {
          assertThat(context.getBean(IdempotencyStore.class)).isInstanceOf(JdbcStore.class);
          assertThat(tables(context.getBean(DataSource.class))).doesNotContain("once_records");
        });
  }

  @Test
  void postgresIsDetectedToo() {
    runner.withBean(DataSource.class, TestDatabases::postgres)
        .withPropertyValues("once.jdbc.create-schema=true", "once.jdbc.table=spring_detect")
        .run(context -> {
          JdbcStore store = (JdbcStore) context.getBean(IdempotencyStore.class);
          assertThat(store.dialect()).isEqualTo(JdbcDialect.POSTGRESQL);
        });
  }

  @Test
  void jdbcRequestedWithoutADataSourceFailsTheStartup() {
    runner.withPropertyValues("once.store=jdbc").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .hasMessageContaining("once.store=jdbc needs one DataSource bean");
    });
  }

  @Test
  void propertiesFeedTheOnceBuilder() {
    runner.withPropertyValues("once.store=memory", "once.lease=7s", "once.retention=2h",
            "once.in-progress-wait=3s", "once.max-payload=64KB", "once.heartbeat=false")
        .run(context -> {
          Once.Config config = context.getBean(Once.class).config();
          assertThat(config.lease()).isEqualTo(Duration.ofSeconds(7));
          assertThat(config.retention()).isEqualTo(Duration.ofHours(2));
          assertThat(config.inProgress().maxWait()).isEqualTo(Duration.ofSeconds(3));
          assertThat(config.maxPayloadBytes()).isEqualTo(64 * 1024);
          assertThat(config.heartbeat()).isNull();
        });
  }

  @Test
  void defaultsAreTheBuildersOwn() {
    runner.withPropertyValues("once.store=memory").run(context -> {
      Once.Config config = context.getBean(Once.class).config();
      assertThat(config.lease()).isEqualTo(Once.Builder.DEFAULT_LEASE);
      assertThat(config.retention()).isEqualTo(Once.Builder.DEFAULT_RETENTION);
      assertThat(config.inProgress().waits()).isFalse();
      assertThat(config.maxPayloadBytes()).isEqualTo(Once.Builder.DEFAULT_MAX_PAYLOAD_BYTES);
      // Issue 24: on by default, so a method running longer than the lease is not taken over.
      assertThat(config.heartbeat()).isNotNull();
    });
  }

  @Test
  void heartbeatRunsOnTheBackgroundScheduler() {
    runner.withPropertyValues("once.store=memory", "once.heartbeat=true")
        .run(context -> assertThat(context.getBean(Once.class).config().heartbeat()).isNotNull());
  }

  @Test
  void userBeansWin() {
    InMemoryStore mine = new InMemoryStore();
    runner.withBean(IdempotencyStore.class, () -> mine)
        .withBean(DataSource.class, TestDatabases::sqlite)
        .run(context -> {
          assertThat(context.getBean(IdempotencyStore.class)).isSameAs(mine);
          assertThat(context.getBean(Once.class).store()).isSameAs(mine);
        });
    Once myOnce = Once.builder(new InMemoryStore()).build();
    runner.withBean(Once.class, () -> myOnce)
        .run(context -> assertThat(context.getBean(Once.class)).isSameAs(myOnce));
  }

  @Test
  void customizersAndListenerBeansAreApplied() {
    List<String> events = new ArrayList<>();
    FailurePolicy policy = FailurePolicy.retryAll().terminalOn(IllegalStateException.class);
    runner.withPropertyValues("once.store=memory")
        .withBean(OnceBuilderCustomizer.class, () -> builder -> builder.failurePolicy(policy))
        .withBean("first", OnceListener.class, () -> new OnceListener() {
          @Override
          public void onAcquired(IdempotencyKey key, long token, boolean takeover) {
            events.add("first:" + key.key());
          }
        })
        .withBean("second", OnceListener.class, () -> new OnceListener() {
          @Override
          public void onReplayed(IdempotencyKey key) {
            events.add("second:" + key.key());
          }
        })
        .run(context -> {
          Once once = context.getBean(Once.class);
          assertThat(once.config().failurePolicy()).isSameAs(policy);
          once.execute(IdempotencyKey.of("s", "k1"), Fingerprint.of("x"), Codecs.utf8(), a -> "v");
          once.execute(IdempotencyKey.of("s", "k1"), Fingerprint.of("x"), Codecs.utf8(), a -> "v");
          assertThat(events).containsExactly("first:k1", "second:k1");
        });
  }

  @Test
  void metricsAreRecordedIntoTheContextsRegistry() {
    runner.withPropertyValues("once.store=memory")
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .run(context -> {
          assertThat(context).hasSingleBean(MicrometerOnceListener.class);
          Once once = context.getBean(Once.class);
          IdempotencyKey key = IdempotencyKey.of("orders", "k");
          once.execute(key, Fingerprint.of("x"), Codecs.utf8(), a -> "v");
          once.execute(key, Fingerprint.of("x"), Codecs.utf8(), a -> "v");
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          assertThat(registry.get(OnceMetrics.OUTCOMES).tag(OnceMetrics.TAG_OUTCOME, "replayed")
              .tag(OnceMetrics.TAG_SCOPE, "orders").tag(OnceMetrics.TAG_STORE, "inmemory")
              .counter().count()).isEqualTo(1.0);
          assertThat(registry.get(OnceMetrics.OUTCOMES).tag(OnceMetrics.TAG_OUTCOME, "acquired")
              .counter().count()).isEqualTo(1.0);
        });
  }

  @Test
  void noRegistryNoMetricsListener() {
    runner.withPropertyValues("once.store=memory")
        .run(context -> assertThat(context).doesNotHaveBean(MicrometerOnceListener.class));
    runner.withPropertyValues("once.store=memory", "once.metrics.enabled=false")
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .run(context -> assertThat(context).doesNotHaveBean(MicrometerOnceListener.class));
  }

  @Test
  void anObservationRegistryAddsTheObservationListenerNextToTheMetricsOne() {
    TestObservationRegistry observations = TestObservationRegistry.create();
    runner.withPropertyValues("once.store=memory")
        .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
        .withBean(ObservationRegistry.class, () -> observations)
        .run(context -> {
          assertThat(context).hasSingleBean(MicrometerOnceListener.class)
              .hasSingleBean(ObservationOnceListener.class);
          Once once = context.getBean(Once.class);
          once.execute(IdempotencyKey.of("orders", "k"), Fingerprint.of("x"), Codecs.utf8(),
              a -> "v");
          TestObservationRegistryAssert.assertThat(observations)
              .hasSingleObservationThat().hasNameEqualTo(OnceObservations.EXECUTION)
              .hasLowCardinalityKeyValue(OnceObservations.STORE, "inmemory")
              .hasLowCardinalityKeyValue(OnceObservations.OUTCOME, OnceObservations.COMPLETED);
          assertThat(context.getBean(MeterRegistry.class).get(OnceMetrics.OUTCOMES)
              .tag(OnceMetrics.TAG_OUTCOME, "completed").counter().count()).isEqualTo(1.0);
        });
    runner.withPropertyValues("once.store=memory", "once.observations.enabled=false")
        .withBean(ObservationRegistry.class, TestObservationRegistry::create)
        .run(context -> assertThat(context).doesNotHaveBean(ObservationOnceListener.class));
    runner.withPropertyValues("once.store=memory")
        .run(context -> assertThat(context).doesNotHaveBean(ObservationOnceListener.class));
  }

  @Test
  void theProblemDetailsHandlerIsMadeOnlyForSpringMvcAndBacksOff() {
    runner.withPropertyValues("once.store=memory")
        .run(context -> assertThat(context).doesNotHaveBean(IdempotentExceptionHandler.class));
    WebApplicationContextRunner web = new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class));
    web.withPropertyValues("once.store=memory")
        .run(context -> assertThat(context).hasSingleBean(IdempotentExceptionHandler.class));
    web.withPropertyValues("once.store=memory", "once.http.problem-details=false")
        .run(context -> assertThat(context).doesNotHaveBean(IdempotentExceptionHandler.class));
    IdempotentExceptionHandler mine = new IdempotentExceptionHandler();
    web.withPropertyValues("once.store=memory")
        .withBean(IdempotentExceptionHandler.class, () -> mine)
        .run(context -> assertThat(context.getBean(IdempotentExceptionHandler.class))
            .isSameAs(mine));
  }

  @Test
  void healthIsUpWhileTheStoreAnswersAndDownWhenItFails() {
    runner.withBean(DataSource.class, TestDatabases::postgres)
        .withPropertyValues("once.jdbc.create-schema=true", "once.jdbc.table=spring_health")
        .run(context -> {
          HealthIndicator health = context.getBean("onceHealthIndicator", HealthIndicator.class);
          Health up = health.health();
          assertThat(up.getStatus()).isEqualTo(Status.UP);
          assertThat(up.getDetails()).containsEntry("store", "JdbcStore");
          context.getBean(HikariDataSource.class).close();
          Health down = health.health();
          assertThat(down.getStatus()).isEqualTo(Status.DOWN);
          assertThat(down.getDetails()).containsKey("error");
        });
  }

  @Test
  void healthCanBeSwitchedOff() {
    runner.withPropertyValues("once.store=memory", "management.health.once.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean("onceHealthIndicator"));
  }

  @Test
  void theFilterIsRegisteredOnlyInAServletWebApplication() {
    runner.withPropertyValues("once.store=memory")
        .run(context -> assertThat(context).doesNotHaveBean(IdempotencyFilter.class));
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory", "once.http.paths=/charges/**",
            "once.http.scope=payments", "once.http.tenant-header=X-Api-Key",
            "once.http.filter-order=5")
        .run(context -> {
          IdempotencyFilter filter = context.getBean(IdempotencyFilter.class);
          assertThat(filter.toString()).contains("paths=[/charges/**]", "scope=payments");
          FilterRegistrationBean<?> registration =
              context.getBean("onceIdempotencyFilterRegistration", FilterRegistrationBean.class);
          assertThat(registration.getFilter()).isSameAs(filter);
          assertThat(registration.getOrder()).isEqualTo(5);
          assertThat(registration.getUrlPatterns()).containsExactly("/*");
        });
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory", "once.http.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(IdempotencyFilter.class));
  }

  @Test
  void theWebFilterIsRegisteredOnlyInAReactiveWebApplicationAndBacksOff() {
    ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class));
    reactive.withPropertyValues("once.store=memory", "once.http.paths=/charges/**",
            "once.http.scope=payments", "once.http.tenant-principal=true",
            "once.http.filter-order=5")
        .withBean(IdempotencyWebFilterCustomizer.class,
            () -> builder -> builder.retryAfter(Duration.ofSeconds(7)))
        .run(context -> {
          assertThat(context).doesNotHaveBean(IdempotencyFilter.class);
          OrderedWebFilter ordered = context.getBean(OrderedWebFilter.class);
          assertThat(ordered.getOrder()).isEqualTo(5);
          IdempotencyWebFilter.Config config = ordered.filter().config();
          assertThat(config.paths()).containsExactly("/charges/**");
          assertThat(config.scope()).isEqualTo("payments");
          assertThat(config.retryAfter()).isEqualTo(Duration.ofSeconds(7));
          assertThat(config.once()).isSameAs(context.getBean(Once.class));
        });
    reactive.withPropertyValues("once.store=memory", "once.http.tenant-header=X-Api-Key",
            "once.http.tenant-principal=true")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("not both"));
    reactive.withPropertyValues("once.store=memory", "once.http.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(OrderedWebFilter.class));
    reactive.withPropertyValues("once.store=memory")
        .withBean("mine", IdempotencyWebFilter.class,
            () -> IdempotencyWebFilter.builder(Once.builder(new dev.once.InMemoryStore()).build())
                .build())
        .run(context -> assertThat(context).doesNotHaveBean(OrderedWebFilter.class)
            .hasSingleBean(IdempotencyWebFilter.class));
    new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
        .withPropertyValues("once.store=memory")
        .run(context -> assertThat(context).doesNotHaveBean(OrderedWebFilter.class));
  }

  @Test
  void badFilterPropertiesFailTheStartupClearly() {
    WebApplicationContextRunner web = new WebApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class));
    web.withPropertyValues("once.store=memory", "once.http.tenant-header=X-Api-Key",
            "once.http.tenant-principal=true")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("not both"));
    web.withPropertyValues("once.store=memory", "once.http.replay-headers=Set-Cookie")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessageContaining("Set-Cookie is never stored"));
  }

  @Test
  void maintenanceIsScheduledAndStopsWithTheContext() {
    runner.withPropertyValues("once.store=memory", "once.maintenance.interval=1h")
        .run(context -> assertThat(context.getBean(dev.once.spring.internal.OnceBackgroundTasks.class)
            .toString()).contains("maintenance"));
    runner.withPropertyValues("once.store=memory", "once.maintenance.enabled=false")
        .run(context -> assertThat(context.getBean(dev.once.spring.internal.OnceBackgroundTasks.class)
            .toString()).contains("idle"));
  }

  private static List<String> tables(DataSource dataSource) throws SQLException {
    List<String> names = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        ResultSet rs = c.getMetaData().getTables(null, null, "%", null)) {
      while (rs.next()) {
        names.add(rs.getString("TABLE_NAME"));
      }
    }
    return names;
  }
}
