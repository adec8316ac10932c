package dev.once.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.spi.IdempotencyStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.junit.jupiter.api.Test;

/** The README's usage, compiled and run, so the example cannot rot. */
class ReadmeExampleTest {

  @Test
  void theReadmeSetupRecordsMeters() {
    MeterRegistry registry = new SimpleMeterRegistry();
    IdempotencyStore store = new InMemoryStore();

    // --- README usage, verbatim ---
    Once once = Once.builder(store)
        .listener(MicrometerOnceListener.builder(registry)
            .store(store)                                   // tag store=inmemory (or storeName("…"))
            .tags("application", "payments")                // on every meter
            .build())
        .build();
    // --- end ---

    for (int delivery = 0; delivery < 3; delivery++) {
      once.execute(IdempotencyKey.of("payments.charge", "order-42"), Fingerprint.of("{}"),
          Codecs.utf8(), attempt -> "charged");
    }

    assertThat(registry.get(OnceMetrics.OUTCOMES).tag(OnceMetrics.TAG_OUTCOME, OnceMetrics.REPLAYED)
        .tag(OnceMetrics.TAG_SCOPE, "payments.charge").counter().count()).isEqualTo(2);
    assertThat(registry.get(OnceMetrics.EXECUTIONS).tag("application", "payments").timer().count())
        .isEqualTo(1);
  }

  @Test
  void theReadmeTracesSetupObservesEveryCall() {
    MeterRegistry meterRegistry = new SimpleMeterRegistry();
    TestObservationRegistry observationRegistry = TestObservationRegistry.create();
    IdempotencyStore store = new InMemoryStore();

    // --- README traces, verbatim ---
    Once once = Once.builder(store)
        .listener(OnceListener.compose(
            MicrometerOnceListener.of(meterRegistry, store),
            ObservationOnceListener.of(observationRegistry, store)))   // spans, with a tracer bridge
        .build();
    // --- end ---

    for (int delivery = 0; delivery < 3; delivery++) {
      once.execute(IdempotencyKey.of("payments.charge", "order-42"), Fingerprint.of("{}"),
          Codecs.utf8(), attempt -> "charged");
    }

    TestObservationRegistryAssert.assertThat(observationRegistry)
        .hasNumberOfObservationsWithNameEqualTo(OnceObservations.EXECUTION, 3)
        .hasAnObservationWithAKeyValue(OnceObservations.OUTCOME, OnceObservations.COMPLETED);
    assertThat(meterRegistry.get(OnceMetrics.OUTCOMES)
        .tag(OnceMetrics.TAG_OUTCOME, OnceMetrics.REPLAYED).counter().count()).isEqualTo(2);
  }
}
