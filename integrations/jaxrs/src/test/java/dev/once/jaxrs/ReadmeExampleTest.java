package dev.once.jaxrs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.spi.IdempotencyStore;
import dev.once.testkit.http.ContractServer;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.Test;

/** The README's usage, compiled and run in Jersey on a real socket, so the example cannot rot. */
class ReadmeExampleTest {

  static final AtomicInteger charges = new AtomicInteger();

  /** The application: creates a charge per POST. */
  @Path("/payments/charges")
  public static final class ChargesResource {
    @POST
    @Produces(MediaType.APPLICATION_JSON)
    public Response charge(String body) {
      return Response.status(201).entity("{\"id\":\"ch_" + charges.incrementAndGet() + "\"}")
          .build();
    }
  }

  /** How a Jersey application registers the feature at start-up. */
  static ResourceConfig application(IdempotencyStore store) {
    // --- README usage, verbatim ---
    Once once = Once.builder(store)                           // InMemoryStore, JdbcStore, …
        .lease(Duration.ofSeconds(30))
        .build();
    IdempotencyFeature idempotency = IdempotencyFeature.builder(once)
        .paths("/payments/**")                                // POST and PATCH by default
        .tenantResolver(TenantResolver.header("X-Api-Key"))   // or principal(), or your lambda
        .build();
    ResourceConfig config = new ResourceConfig()
        .register(idempotency)
        .register(ChargesResource.class);
    // --- end ---
    return config;
  }

  @Test
  void theReadmeSetupMakesARetryAReplay() throws Exception {
    try (ContractServer server = JerseyContract.serve(application(new InMemoryStore()))) {
      HttpClient client = HttpClient.newHttpClient();
      HttpRequest request = HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + server.port() + "/payments/charges"))
          .header("Idempotency-Key", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"")
          .header("X-Api-Key", "sk_test_123")
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":1000}"))
          .build();

      HttpResponse<String> first = client.send(request, HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> retry = client.send(request, HttpResponse.BodyHandlers.ofString());

      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.body()).isEqualTo(first.body()).isNotEmpty();
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(retry.headers().firstValue("Content-Type"))
          .isEqualTo(first.headers().firstValue("Content-Type"));
      assertThat(charges.get()).isEqualTo(1);
    }
  }
}
