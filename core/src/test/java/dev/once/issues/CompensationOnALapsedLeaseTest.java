package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.FailurePolicy;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.ManualClock;
import dev.once.Once;
import dev.once.Step;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Found in review of issue 23: steps were refused on a lease that had passed by the worker's
 * clock, compensations were not. A worker whose lease lapsed while it compensated went on
 * undoing the next step while its successor, taking over at the store's lease end, undid it too.
 */
class CompensationOnALapsedLeaseTest {

  private final InMemoryStore store = new InMemoryStore();
  private final List<String> effects = new CopyOnWriteArrayList<>();
  private final IdempotencyKey key = IdempotencyKey.of("orders", "o-1");

  @Test
  void aCompensationDoesNotStartOnALapsedLease() {
    ManualClock clock = new ManualClock();
    Duration lease = Duration.ofSeconds(30);
    AtomicBoolean successorRan = new AtomicBoolean();
    @SuppressWarnings("unchecked")
    Step<String>[] s1 = new Step[1];
    Once[] successor = new Once[1];
    Runnable runSuccessor = () -> {
      if (successorRan.compareAndSet(false, true)) {
        clock.advance(Duration.ofSeconds(10)); // past the store's lease (lease + margin)
        try {
          successor[0].execute(key, Fingerprint.of("o"), Codecs.utf8(), a -> "returns");
        } catch (RuntimeException expected) {
          // ReplayedFailureException: the committed failure
        }
      }
    };
    s1[0] = Step.of("s1", Codecs.utf8()).compensate((r, k) -> {
      runSuccessor.run(); // the zombie's undo is slow; meanwhile the successor takes over
      effects.add("undo s1");
    });
    Step<String> s2 = Step.of("s2", Codecs.utf8()).compensate((r, k) -> {
      clock.advance(Duration.ofSeconds(35)); // a GC pause: the worker's lease (30s) passed
      effects.add("undo s2");
    });
    Once zombie = Once.builder(store).clock(clock).lease(lease)
        .clockSkewMargin(Duration.ofSeconds(10)).steps(s1[0], s2)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();
    successor[0] = Once.builder(store).clock(clock).lease(lease)
        .clockSkewMargin(Duration.ofSeconds(10)).steps(s1[0], s2)
        .failurePolicy(FailurePolicy.retryAll().terminalOn(IllegalArgumentException.class))
        .build();

    try {
      zombie.execute(key, Fingerprint.of("o"), Codecs.utf8(), a -> {
        a.step(s1[0], k -> "one");
        a.step(s2, k -> "two");
        throw new IllegalArgumentException("terminal");
      });
    } catch (RuntimeException expected) {
      // terminal / lease lost
    }
    runSuccessor.run();

    assertThat(Collections.frequency(effects, "undo s2")).isEqualTo(1);
    assertThat(Collections.frequency(effects, "undo s1"))
        .as("s1 undone by the zombie on a lapsed lease and by its successor").isEqualTo(1);
  }
}
