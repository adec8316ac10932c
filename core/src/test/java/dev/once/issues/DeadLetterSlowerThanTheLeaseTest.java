package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.InMemoryStore;
import dev.once.ManualClock;
import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.DeadLetter;
import dev.once.batch.ItemResult.Status;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 9: when a handler failed for good, the engine stopped renewing the claim
 * before publishing the dead letter and stored the failure only after. A publish slower than the
 * lease (a broker that answers late: Kafka waits up to 30 s) let a second consumer take the
 * message over and run the handler again. The claim is now held (renewed by the heartbeat) until
 * the failure is stored.
 */
class DeadLetterSlowerThanTheLeaseTest {

  private static final Duration LEASE = Duration.ofSeconds(30);

  record Msg(String key) {}

  @Test
  void aDeadLetterPublishSlowerThanTheLeaseRunsTheHandlerOnce() {
    ManualClock clock = new ManualClock();
    TestParts.HandScheduler beats = new TestParts.HandScheduler();
    InMemoryStore store = new InMemoryStore();
    Once once = Once.builder(store).clock(clock).lease(LEASE).heartbeat(beats)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    AtomicInteger runs = new AtomicInteger();
    List<String> deadLetters = new CopyOnWriteArrayList<>();
    AtomicReference<BatchExecutor<Msg>> other = new AtomicReference<>();
    List<Status> otherSaw = new CopyOnWriteArrayList<>();
    BatchExecutor.Builder<Msg> builder = BatchExecutor.<Msg>builder(once, (m, a) -> {
      runs.incrementAndGet();
      throw new IllegalArgumentException("card declined");
    }).scope("payments").key(Msg::key).fingerprint(m -> Fingerprint.of(m.key()));
    other.set(builder.deadLetters(letter -> deadLetters.add("second " + letter.message().key()))
        .build());
    BatchExecutor<Msg> first = builder.deadLetters(letter -> {
      // The broker answers late: two leases pass while the heartbeat keeps beating, and the
      // message is delivered to another consumer meanwhile.
      for (int i = 0; i < 6; i++) {
        clock.advance(LEASE.dividedBy(3));
        beats.beat();
      }
      otherSaw.add(other.get().process(List.of(letter.message())).items().get(0).status());
      deadLetters.add("first " + letter.message().key());
    }).build();

    var outcome = first.process(List.of(new Msg("A")));

    assertThat(outcome.items().get(0).status()).isEqualTo(Status.DEAD_LETTERED);
    assertThat(outcome.items().get(0).deadLetterReason())
        .isEqualTo(DeadLetter.Reason.TERMINAL_FAILURE);
    assertThat(runs).as("handler runs").hasValue(1);
    assertThat(otherSaw).containsExactly(Status.IN_PROGRESS);
    assertThat(deadLetters).containsExactly("first A");
  }
}
