package dev.once.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.StoreUnavailableException;
import dev.once.jdbc.JdbcDialect;
import dev.once.jdbc.JdbcStore;
import dev.once.http.IdempotencyProblem;
import dev.once.spi.IdempotencyStore;
import dev.once.spring.autoconfigure.OnceAutoConfiguration;
import dev.once.spring.internal.OnceFailureAnalyzer;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The application starts while its database is down (issue 18): the store never connects while
 * beans are made, the first call answers {@link StoreUnavailableException} (HTTP 503), and the one
 * thing that must connect at startup, {@code once.jdbc.create-schema=true}, fails it with one
 * clear description and action instead of a chain of bean creation exceptions.
 */
@ExtendWith(OutputCaptureExtension.class)
class DatabaseDownTest {

  /** A bean with an idempotent method. */
  public static class Charges {
    @Idempotent(key = "#key", scope = "charges")
    public Map<String, Object> charge(String key) {
      return Map.of("id", "ch_" + key);
    }
  }

  /** The HTTP side of {@link DownApplication}. */
  @RestController
  public static class ChargesApi {
    private final Charges charges;

    public ChargesApi(Charges charges) {
      this.charges = charges;
    }

    @PostMapping("/charges/{key}")
    public Map<String, Object> charge(@PathVariable String key) {
      return charges.charge(key);
    }
  }

  /** A whole application over spring.datasource.url, as a user's would be. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Charges.class, ChargesApi.class})
  static class DownApplication {}

  /** A PostgreSQL URL on a port nothing listens on. */
  static String downUrl() throws IOException {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    return "jdbc:postgresql://127.0.0.1:" + port + "/app";
  }

  static DataSource down() throws IOException {
    PGSimpleDataSource dataSource = new PGSimpleDataSource();
    dataSource.setURL(downUrl());
    dataSource.setConnectTimeout(1);
    return dataSource;
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(OnceAutoConfiguration.class))
      .withBean(Charges.class);

  @Test
  void theContextStartsAndTheFirstCallFindsTheStoreUnavailable() throws IOException {
    DataSource dataSource = down();
    runner.withBean(DataSource.class, () -> dataSource)
        .withPropertyValues("once.jdbc.dialect=postgresql")
        .run(context -> {
          assertThat(context).hasNotFailed();
          JdbcStore store = (JdbcStore) context.getBean(IdempotencyStore.class);
          assertThat(store.dialect()).isEqualTo(JdbcDialect.POSTGRESQL); // named, not asked
          assertThatThrownBy(() -> context.getBean(Charges.class).charge("k1"))
              .isInstanceOf(StoreUnavailableException.class);
          HealthIndicator health = context.getBean("onceHealthIndicator", HealthIndicator.class);
          assertThat(health.health().getStatus()).isEqualTo(Status.DOWN);
        });
  }

  @Test
  void withoutADialectItIsDetectedOnTheFirstCallNotAtStartup() throws IOException {
    DataSource dataSource = down();
    runner.withBean(DataSource.class, () -> dataSource).run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(context.getBean(IdempotencyStore.class).toString())
          .contains("dialect detected on first call");
      assertThatThrownBy(() -> context.getBean(Charges.class).charge("k1"))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("detecting the database dialect failed");
    });
  }

  @Test
  void theDialectPropertyNamesEachDatabase() {
    for (String[] named : new String[][] {{"postgresql", "POSTGRESQL"}, {"mariadb", "MARIADB"},
        {"mysql", "MARIADB"}, {"sqlite", "SQLITE"}}) {
      runner.withBean(DataSource.class, TestDatabases::sqlite)
          .withPropertyValues("once.jdbc.dialect=" + named[0])
          .run(context -> assertThat(((JdbcStore) context.getBean(IdempotencyStore.class))
              .dialect()).isEqualTo(JdbcDialect.valueOf(named[1])));
    }
  }

  @Test
  void creatingTheSchemaWhileTheDatabaseIsDownFailsWithOneClearAnalysis() throws IOException {
    DataSource dataSource = down();
    runner.withBean(DataSource.class, () -> dataSource)
        .withPropertyValues("once.jdbc.create-schema=true", "once.jdbc.dialect=postgresql")
        .run(context -> {
          assertThat(context).hasFailed();
          FailureAnalysis analysis = new OnceFailureAnalyzer().analyze(context.getStartupFailure());
          assertThat(analysis).isNotNull();
          assertThat(analysis.getDescription()).startsWith("Once could not create its table"
              + " once_records at startup (once.jdbc.create-schema=true): ");
          assertThat(analysis.getAction())
              .contains("Start the database", "once.jdbc.create-schema=false",
                  "JdbcDialect.POSTGRESQL.schema(\"once_records\")", "once.jdbc.dialect");
          assertThat(analysis.getCause()).hasCauseInstanceOf(StoreUnavailableException.class);
        });
  }

  @Test
  void aWholeApplicationReportsTheAnalysisNotTheChain(CapturedOutput output) throws IOException {
    SpringApplicationBuilder app = new SpringApplicationBuilder(DownApplication.class)
        .web(WebApplicationType.NONE)
        .properties("spring.datasource.url=" + downUrl(),
            "spring.datasource.hikari.connection-timeout=250",
            "once.jdbc.create-schema=true");

    assertThatThrownBy(app::run).isInstanceOf(RuntimeException.class);
    assertThat(output)
        .contains("APPLICATION FAILED TO START")
        .contains("Once could not create its table once_records at startup"
            + " (once.jdbc.create-schema=true)")
        .contains("set once.jdbc.create-schema=false");
  }

  @Test
  void aWholeWebApplicationStartsAndAnswers503() throws Exception {
    try (ConfigurableApplicationContext context = new SpringApplicationBuilder(
        DownApplication.class)
        .properties("spring.datasource.url=" + downUrl(),
            "spring.datasource.hikari.connection-timeout=250",
            "once.jdbc.dialect=postgresql", "once.http.enabled=false",
            "server.port=0", "server.address=127.0.0.1")
        .run()) {
      int port = ((WebServerApplicationContext) context).getWebServer().getPort();
      HttpResponse<String> response = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/charges/k1"))
              .POST(HttpRequest.BodyPublishers.noBody()).build(),
          HttpResponse.BodyHandlers.ofString());

      assertThat(response.statusCode()).isEqualTo(503);
      assertThat(response.headers().firstValue("Retry-After")).contains("1");
      assertThat(response.headers().firstValue("Content-Type"))
          .contains("application/problem+json");
      assertThat(response.body()).contains(IdempotencyProblem.STORE_UNAVAILABLE.type());
    }
  }
}
