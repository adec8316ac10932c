package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.Step;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult;
import dev.once.batch.ItemResult.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 4: a terminal failure whose compensation keeps failing was released and
 * redelivered forever — never dead-lettered, the handler's code outside steps re-run on every
 * delivery, and everything behind it in its ordering group waiting. Now the failed tries are
 * journaled, and after {@link Once.Builder#compensationAttempts} of them the message is
 * dead-lettered as {@link DeadLetter.Reason#COMPENSATION_FAILED}, its stored failure naming the
 * steps left undone.
 */
class CompensationThatKeepsFailingTest {

  record Msg(String key) {}

  @Test
  void aCompensationThatAlwaysFailsIsDeadLetteredAfterItsAttempts() {
    Step<String> charge = Step.of("charge", Codecs.utf8()).compensate((r, k) -> {
      throw new IllegalStateException("refunds are down");
    });
    Once once = Once.builder(new InMemoryStore()).steps(charge).compensationAttempts(3)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    AtomicInteger runs = new AtomicInteger();
    List<DeadLetter<Msg>> deadLetters = new CopyOnWriteArrayList<>();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      runs.incrementAndGet();
      a.step(charge, k -> "ch-1");
      throw new IllegalArgumentException("address rejected");
    }).scope("orders").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .deadLetters(deadLetters::add).maxAttempts(10).build();

    List<Status> seen = new ArrayList<>();
    for (int delivery = 0; delivery < 20 && !seen.contains(Status.DEAD_LETTERED); delivery++) {
      ItemResult<Msg> item = executor.process(List.of(new Msg("A"))).items().get(0);
      seen.add(item.status());
    }

    assertThat(seen).containsExactly(Status.RETRY, Status.RETRY, Status.DEAD_LETTERED);
    assertThat(runs).hasValueLessThanOrEqualTo(3);
    assertThat(deadLetters).singleElement().satisfies(letter -> {
      assertThat(letter.reason()).isEqualTo(DeadLetter.Reason.COMPENSATION_FAILED);
      assertThat(letter.exceptionMessage()).contains("NOT compensated: charge");
    });
  }
}
