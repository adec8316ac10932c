package dev.once.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.ReplayedFailureException;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.exporter.FinishedSpan;
import io.micrometer.tracing.test.SampleTestRunner;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Once's observations as real spans, through Micrometer Tracing's in-memory Brave and
 * OpenTelemetry tracers: each call is a span in the caller's trace, child of the caller's span,
 * with its outcome and key as tags and the store calls as span events.
 */
class ObservationTracingTest extends SampleTestRunner {

  @Override
  public TracingSetup[] getTracingSetup() {
    return new TracingSetup[] {TracingSetup.IN_MEMORY_BRAVE, TracingSetup.IN_MEMORY_OTEL};
  }

  @Override
  public SampleTestRunnerConsumer yourCode() {
    return (blocks, meterRegistry) -> {
      InMemoryStore store = new InMemoryStore();
      Once once = Once.builder(store)
          .listener(ObservationOnceListener.of(getObservationRegistry(), store))
          .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
          .build();
      Span caller = Objects.requireNonNull(blocks.getTracer().currentSpan());
      IdempotencyKey charge = IdempotencyKey.of("payments.charge", "order-42");

      once.execute(charge, Fingerprint.of("a"), Codecs.utf8(), attempt -> "ch_1");
      once.execute(charge, Fingerprint.of("a"), Codecs.utf8(), attempt -> "ch_2");
      IdempotencyKey declined = IdempotencyKey.of("payments.charge", "order-43");
      assertThatThrownBy(() -> once.execute(declined, Fingerprint.of("a"), Codecs.utf8(),
          attempt -> {
            throw new IllegalArgumentException("card declined");
          })).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> once.execute(declined, Fingerprint.of("a"), Codecs.utf8(),
          attempt -> "never")).isInstanceOf(ReplayedFailureException.class);

      List<FinishedSpan> spans = blocks.getFinishedSpans().stream()
          .filter(span -> span.getName().equals("once payments.charge")).toList();
      assertThat(spans).hasSize(4).allSatisfy(span -> {
        assertThat(span.getTraceId()).isEqualTo(caller.context().traceId());
        assertThat(span.getParentId()).isEqualTo(caller.context().spanId());
        assertThat(span.getTags()).containsEntry(OnceObservations.SCOPE, "payments.charge")
            .containsEntry(OnceObservations.STORE, "inmemory");
      });
      assertThat(spans).extracting(span -> span.getTags().get(OnceObservations.OUTCOME))
          .containsExactly("completed", "replayed", "failed_terminal", "replayed");

      FinishedSpan executed = spans.get(0);
      assertThat(executed.getTags()).containsEntry(OnceObservations.KEY, "order-42")
          .containsKey(OnceObservations.TOKEN);
      assertThat(executed.getEvents()).extracting(Map.Entry::getValue)
          .anySatisfy(event -> assertThat(event).startsWith("claim "))
          .anySatisfy(event -> assertThat(event).startsWith("complete "));
      assertThat(spans.get(2).getError()).hasMessage("card declined");
    };
  }
}
