package dev.once.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.micrometer.ObservationOnceListener;
import dev.once.micrometer.OnceObservations;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;

/**
 * With an {@code ObservationRegistry} in the context, every call through the filter is a span in
 * the request's trace, with no code: the starter composes the observation listener into the
 * {@code Once} bean, and Spring MVC's server observation is its parent. The registry is a
 * {@link TestObservationRegistry} feeding Micrometer Tracing's {@link SimpleTracer}.
 */
@SpringBootTest(classes = {HttpFilterApplication.class, TracingTest.Tracing.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "server.address=127.0.0.1",
        "once.jdbc.create-schema=true",
        "once.http.paths=/charges/**",
        "once.http.scope=payments"})
class TracingTest {

  /** The registry and the tracer behind it. */
  @TestConfiguration
  static class Tracing {
    @Bean
    SimpleTracer tracer() {
      return new SimpleTracer();
    }

    @Bean
    TestObservationRegistry observationRegistry(SimpleTracer tracer) {
      TestObservationRegistry registry = TestObservationRegistry.create();
      registry.observationConfig().observationHandler(new DefaultTracingObservationHandler(tracer));
      return registry;
    }
  }

  @LocalServerPort
  int port;

  @Autowired
  TestObservationRegistry registry;

  @Autowired
  SimpleTracer tracer;

  @Autowired
  ObservationOnceListener listener;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void aRequestAndItsRetryAreSpansInTheirRequestsTraces() throws Exception {
    assertThat(post("k-traced").statusCode()).isEqualTo(201);
    HttpResponse<String> retry = post("k-traced");
    assertThat(retry.headers().firstValue("Idempotent-Replayed")).contains("true");

    TestObservationRegistryAssert.assertThat(registry)
        .hasObservationWithNameEqualTo(OnceObservations.EXECUTION).that()
        .hasLowCardinalityKeyValue(OnceObservations.OUTCOME, OnceObservations.COMPLETED)
        .hasLowCardinalityKeyValue(OnceObservations.SCOPE, "payments")
        .hasLowCardinalityKeyValue(OnceObservations.STORE, "jdbc")
        .hasHighCardinalityKeyValue(OnceObservations.KEY, "k-traced")
        .hasParentObservationContextMatching(
            parent -> parent.getName().equals("http.server.requests"));
    TestObservationRegistryAssert.assertThat(registry)
        .hasAnObservation(observation -> observation
            .hasNameEqualTo(OnceObservations.EXECUTION)
            .hasLowCardinalityKeyValue(OnceObservations.OUTCOME, OnceObservations.REPLAYED));

    List<SimpleSpan> spans = List.copyOf(tracer.getSpans());
    List<SimpleSpan> once = spans.stream().filter(s -> s.getName().equals("once payments"))
        .toList();
    assertThat(once).hasSize(2);
    for (SimpleSpan span : once) {
      SimpleSpan parent = spans.stream()
          .filter(s -> s.getSpanId().equals(span.getParentId())).findFirst().orElseThrow();
      assertThat(parent.getName()).startsWith("http post"); // "/charges" is added at its stop
      assertThat(parent.getTraceId()).isEqualTo(span.getTraceId());
    }
    assertThat(once).extracting(s -> s.getTags().get(OnceObservations.OUTCOME))
        .containsExactly("completed", "replayed");
    assertThat(once.get(0).getEvents()).extracting(e -> e.getValue())
        .anySatisfy(event -> assertThat(event).startsWith("claim "))
        .anySatisfy(event -> assertThat(event).startsWith("complete "));
  }

  private HttpResponse<String> post(String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/charges"))
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .POST(HttpRequest.BodyPublishers.ofString("{\"amount\": 700}")).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
