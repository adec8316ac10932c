package dev.once.jaxrs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.testkit.http.ContractServer;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.MessageBodyWriter;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.zip.GZIPInputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Type;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.glassfish.jersey.message.GZipEncoder;
import org.glassfish.jersey.server.ResourceConfig;
import org.glassfish.jersey.server.filter.EncodingFilter;
import org.junit.jupiter.api.Test;

/**
 * Paths of IdempotencyFeature after the resource came back, or while it still runs: nothing after
 * the resource returned runs it again, no claim is given back while its resource may run, replays
 * and problems pass the application's encoders whole, a thrown WebApplicationException is a
 * failure, and an async resource leaves no call behind on its thread.
 */
class ResponsePathsTest {

  static final AtomicInteger charges = new AtomicInteger();
  static final AtomicInteger slowCharges = new AtomicInteger();

  /** An entity whose serialization fails (a Jackson error on a lazy field, say). */
  public static final class Receipt {
  }

  /** The MessageBodyWriter of Receipt: it always fails, after the resource returned. */
  public static final class FailingReceiptWriter implements MessageBodyWriter<Receipt> {
    @Override
    public boolean isWriteable(Class<?> type, Type genericType, Annotation[] annotations,
        MediaType mediaType) {
      return type == Receipt.class;
    }

    @Override
    public void writeTo(Receipt receipt, Class<?> type, Type genericType,
        Annotation[] annotations, MediaType mediaType, MultivaluedMap<String, Object> headers,
        OutputStream out) {
      throw new IllegalStateException("cannot serialize the receipt");
    }
  }

  @Path("/payments")
  public static final class Resource {
    @POST
    @Path("charge")
    @Produces(MediaType.APPLICATION_JSON)
    public Response charge(String body) {
      charges.incrementAndGet(); // the effect: the card is charged
      return Response.status(201).entity(new Receipt()).build();
    }

    @POST
    @Path("slow")
    @Produces(MediaType.TEXT_PLAIN)
    public Response slow(String body) throws InterruptedException {
      slowCharges.incrementAndGet(); // the effect happens at once
      Thread.sleep(1500); // then a slow downstream call
      return Response.status(201).entity("charged").build();
    }

    @POST
    @Path("gzip")
    @Produces(MediaType.TEXT_PLAIN)
    public Response gzip(String body) {
      return Response.status(201).entity("x".repeat(200)).build();
    }

    @POST
    @Path("conflict")
    @Produces(MediaType.TEXT_PLAIN)
    public Response conflict(String body) {
      charges.incrementAndGet();
      throw new WebApplicationException(
          Response.status(409).entity("insufficient funds, try later").build());
    }
  }

  static HttpResponse<byte[]> post(HttpClient client, ContractServer server, String path,
      String key, String... headers) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + server.port() + path))
        .header("Idempotency-Key", "\"" + key + "\"")
        .header("Content-Type", "application/json")
        .timeout(Duration.ofSeconds(20))
        .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":1000}"));
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  static HttpClient client() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  /**
   * The resource returned (its effect done); then its entity's MessageBodyWriter threw. That error
   * comes after the work, yet the writer interceptor hands it to the call as the work's failure:
   * retryable under the default policy, so the key is released and the retry charges again.
   */
  @Test
  void aWriterThatFailsAfterTheResourceReturnedStoresTheOutcomeSoARetryDoesNotRunItAgain()
      throws Exception {
    charges.set(0);
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(30)).build();
    ResourceConfig config = new ResourceConfig()
        .register(IdempotencyFeature.builder(once).paths("/payments/**").build())
        .register(FailingReceiptWriter.class)
        .register(Resource.class);
    try (ContractServer server = JerseyContract.serve(config)) {
      HttpClient client = client();
      String key = UUID.randomUUID().toString();
      HttpResponse<byte[]> first = post(client, server, "/payments/charge", key);
      HttpResponse<byte[]> retry = post(client, server, "/payments/charge", key);

      assertThat(first.statusCode()).isEqualTo(500);
      assertThat(retry.statusCode()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(new String(retry.body(), java.nio.charset.StandardCharsets.UTF_8))
          .contains("idempotency-response-not-stored");
      assertThat(charges.get())
          .as("the resource ran once; a retry must not charge again (got %s then %s)",
              first.statusCode(), retry.statusCode())
          .isEqualTo(1);
    }
  }

  /**
   * abandonAfter passes while the (synchronous) resource still runs: the held call releases the
   * claim (ResponseNotStored, FAILED retryable), the heartbeat stops, and a duplicate arriving
   * meanwhile claims the key and runs the resource a second time, concurrently with the first.
   */
  @Test
  void aDuplicateWhileASynchronousResourceOutlastsAbandonAfterGets409AndItRunsOnce()
      throws Exception {
    slowCharges.set(0);
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(30)).build();
    ResourceConfig config = new ResourceConfig()
        .register(IdempotencyFeature.builder(once).paths("/payments/**")
            .abandonAfter(Duration.ofMillis(300)).build())
        .register(Resource.class);
    try (ContractServer server = JerseyContract.serve(config)) {
      HttpClient client = client();
      String key = UUID.randomUUID().toString();
      CompletableFuture<HttpResponse<byte[]>> first = CompletableFuture.supplyAsync(() -> {
        try {
          return post(client, server, "/payments/slow", key);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      Thread.sleep(700); // past abandonAfter, the first resource still running
      HttpResponse<byte[]> duplicate = post(client, server, "/payments/slow", key);
      HttpResponse<byte[]> original = first.get();
      HttpResponse<byte[]> retry = post(client, server, "/payments/slow", key);

      assertThat(duplicate.statusCode()).isEqualTo(409);
      assertThat(original.statusCode()).isEqualTo(201);
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(retry.body()).isEqualTo(original.body());
      assertThat(slowCharges.get())
          .as("a duplicate while the original still runs must get 409, not run it (got %s)",
              duplicate.statusCode())
          .isEqualTo(1);
    }
  }

  /**
   * An application with Jersey's gzip EncodingFilter (any client sending Accept-Encoding: gzip).
   * The original is fine (stored uncompressed). The replay is built with an explicit
   * Content-Length of the stored, uncompressed body (IdempotencyFilters#replay), then goes through
   * the application's GZipEncoder like any response: 24 gzip bytes are sent under
   * "Content-Length: 200", and the client waits for bytes that never come.
   */
  @Test
  void aReplayToAClientAcceptingGzipArrivesWholeAndInTime() throws Exception {
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(30)).build();
    ResourceConfig config = new ResourceConfig()
        .register(IdempotencyFeature.builder(once).paths("/payments/**").build())
        .register(Resource.class);
    EncodingFilter.enableFor(config, GZipEncoder.class);
    try (ContractServer server = JerseyContract.serve(config)) {
      HttpClient client = client();
      String key = UUID.randomUUID().toString();
      HttpResponse<byte[]> first = post(client, server, "/payments/gzip", key,
          "Accept-Encoding", "gzip");
      assertThat(first.statusCode()).isEqualTo(201);
      assertThat(first.headers().firstValue("Content-Encoding")).contains("gzip");

      CompletableFuture<HttpResponse<byte[]>> retry = CompletableFuture.supplyAsync(() -> {
        try {
          return post(client, server, "/payments/gzip", key, "Accept-Encoding", "gzip");
        } catch (Exception e) {
          throw new java.util.concurrent.CompletionException(e);
        }
      });
      HttpResponse<byte[]> replay;
      try {
        replay = retry.get(5, java.util.concurrent.TimeUnit.SECONDS);
      } catch (java.util.concurrent.TimeoutException hung) {
        throw new AssertionError("the replay to a gzip-accepting client hung: its Content-Length"
            + " is the uncompressed size, its body the compressed one", hung);
      }
      assertThat(replay.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(replay.body()).isEqualTo(first.body());
      assertThat(replay.headers().firstValue("Content-Encoding"))
          .isEqualTo(first.headers().firstValue("Content-Encoding"));
      assertThat(gunzip(replay.body())).isEqualTo("x".repeat(200));
    }
  }

  @Test
  void aProblemAnswerToAClientAcceptingGzipArrivesWholeAndInTime() throws Exception {
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(30)).build();
    ResourceConfig config = new ResourceConfig()
        .register(IdempotencyFeature.builder(once).paths("/payments/**").build())
        .register(Resource.class);
    EncodingFilter.enableFor(config, GZipEncoder.class);
    try (ContractServer server = JerseyContract.serve(config)) {
      HttpRequest request = HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + server.port() + "/payments/gzip"))
          .header("Accept-Encoding", "gzip")
          .timeout(Duration.ofSeconds(5))
          .POST(HttpRequest.BodyPublishers.ofString("{}")).build();
      HttpResponse<byte[]> missingKey = client().send(request,
          HttpResponse.BodyHandlers.ofByteArray());

      assertThat(missingKey.statusCode()).isEqualTo(400);
      String body = missingKey.headers().firstValue("Content-Encoding").isPresent()
          ? gunzip(missingKey.body()) : new String(missingKey.body(), StandardCharsets.UTF_8);
      assertThat(body).contains("idempotency-key-missing").endsWith("}");
    }
  }

  static String gunzip(byte[] bytes) throws java.io.IOException {
    try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(bytes))) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * A WebApplicationException with an entity bypasses every ExceptionMapper in Jersey, so the
   * FailureMapper never tells the call that the resource threw: its response is stored and
   * replayed, contrary to the FailureMapper's contract ("never a response to store").
   */
  @Test
  void aThrownWebApplicationExceptionWithAnEntityIsAFailureForThePolicyNotAStoredResponse()
      throws Exception {
    charges.set(0);
    Once once = Once.builder(new InMemoryStore()).lease(Duration.ofSeconds(30)).build();
    ResourceConfig config = new ResourceConfig()
        .register(IdempotencyFeature.builder(once).paths("/payments/**").build())
        .register(Resource.class);
    try (ContractServer server = JerseyContract.serve(config)) {
      HttpClient client = client();
      String key = UUID.randomUUID().toString();
      HttpResponse<byte[]> first = post(client, server, "/payments/conflict", key);
      HttpResponse<byte[]> retry = post(client, server, "/payments/conflict", key);

      assertThat(first.statusCode()).isEqualTo(409);
      // Default policy retryAll: the thrown exception is retryable, so the retry runs again.
      assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
      assertThat(charges.get()).isEqualTo(2);
    }
  }
}
