package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.Step;
import dev.once.batch.BatchConfig;
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
        .deadLetters(deadLetters::add).config(BatchConfig.builder().maxAttempts(10).build()).build();

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

  /**
   * Found in review: when the journal with the committed failure added exceeded the payload
   * bound, committing threw before anything was compensated or counted, so the message was
   * retried forever, never compensated, never dead-lettered. The committed failure is now cut
   * to fit.
   */
  @Test
  void aFailureThatDoesNotFitTheJournalIsNeverCompensatedNorFinal() {
    List<String> effects = new CopyOnWriteArrayList<>();
    dev.once.Step<String> charge = dev.once.Step.of("charge", dev.once.Codecs.utf8())
        .compensate((r, k) -> effects.add("refund"));
    Once once = Once.builder(new InMemoryStore()).maxPayloadBytes(400).steps(charge)
        .compensationAttempts(3)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    List<Status> seen = new java.util.ArrayList<>();
    BatchExecutor<Msg> executor = BatchExecutor.<Msg>builder(once, (m, a) -> {
      a.step(charge, k -> "c".repeat(250));
      throw new IllegalArgumentException("rejected: " + "x".repeat(200));
    }).scope("s").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()))
        .deadLetters(l -> {}).config(BatchConfig.builder().maxAttempts(5).build()).build();
    for (int i = 0; i < 10; i++) {
      seen.add(executor.process(List.of(new Msg("A"))).items().get(0).status());
    }
    assertThat(seen).contains(Status.DEAD_LETTERED);
    assertThat(effects).containsExactly("refund");
  }
}
