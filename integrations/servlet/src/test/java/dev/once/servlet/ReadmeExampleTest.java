package dev.once.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.spi.IdempotencyStore;
import jakarta.servlet.ServletContainerInitializer;
import jakarta.servlet.ServletContext;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardContext;
import org.apache.catalina.startup.Tomcat;
import org.junit.jupiter.api.Test;

/** The README's usage, compiled and run in a real container, so the example cannot rot. */
class ReadmeExampleTest {

  static final AtomicInteger charges = new AtomicInteger();

  /** The application: creates a charge per POST. */
  static final class ChargesServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
      res.setStatus(201);
      res.setContentType("application/json");
      res.getWriter().write("{\"id\":\"ch_" + charges.incrementAndGet() + "\"}");
    }
  }

  /** How a plain servlet application registers the filter at start-up. */
  static final class Setup implements ServletContainerInitializer {
    private final IdempotencyStore store;

    Setup(IdempotencyStore store) {
      this.store = store;
    }

    @Override
    public void onStartup(java.util.Set<Class<?>> classes, ServletContext servletContext) {
      // --- README usage, verbatim ---
      Once once = Once.builder(store)                         // InMemoryStore, JdbcStore, …
          .lease(Duration.ofSeconds(30))
          .build();
      IdempotencyFilter filter = IdempotencyFilter.builder(once)
          .paths("/payments/**")                              // POST and PATCH by default
          .tenantResolver(TenantResolver.header("X-Api-Key")) // or principal(), or your lambda
          .build();
      servletContext.addFilter("idempotency", filter)
          .addMappingForUrlPatterns(null, false, "/*");
      // --- end ---
      servletContext.addServlet("charges", new ChargesServlet()).addMapping("/payments/charges");
    }
  }

  @Test
  void theReadmeSetupMakesARetryAReplay() throws Exception {
    Tomcat tomcat = new Tomcat();
    tomcat.setBaseDir(Files.createTempDirectory("once-readme").toString());
    Connector connector = new Connector();
    connector.setPort(0);
    connector.setProperty("address", "127.0.0.1");
    tomcat.setConnector(connector);
    Context context = tomcat.addContext("", null);
    ((StandardContext) context).setClearReferencesRmiTargets(false);
    ((StandardContext) context).setClearReferencesThreadLocals(false);
    context.addServletContainerInitializer(new Setup(new InMemoryStore()), null);
    tomcat.start();
    try {
      HttpClient client = HttpClient.newHttpClient();
      HttpRequest request = HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/payments/charges"))
          .header("Idempotency-Key", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"")
          .header("X-Api-Key", "sk_test_123")
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":1000}"))
          .build();

      HttpResponse<String> first = client.send(request, HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> retry = client.send(request, HttpResponse.BodyHandlers.ofString());

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.body()).isEqualTo(first.body());
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(charges.get()).isEqualTo(1);
      assertThat(first.body().getBytes(StandardCharsets.UTF_8)).isNotEmpty();
    } finally {
      tomcat.stop();
      tomcat.destroy();
    }
  }
}
