package dev.once.issues;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.ManualClock;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.Step;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Issue 28, item 1: a worker frozen between its claim and the start of its work (here a real
 * thread, held in the listener's onAcquired, which runs between the two) wakes after its lease
 * passed and a successor completed the key. It used to start the work anyway (its completion was
 * then fenced, but the effect ran twice). Now the work does not start: LeaseLostException.
 */
class WorkerFrozenBetweenClaimAndWorkTest {

  private static final Duration LEASE = Duration.ofSeconds(30);
  private final ManualClock clock = new ManualClock();
  private final InMemoryStore store = new InMemoryStore();
  private final IdempotencyKey key = IdempotencyKey.of("mail", "receipt-7");
  private final List<String> effects = new CopyOnWriteArrayList<>();

  @Test
  void aWorkerFrozenPastItsLeaseBeforeItsWorkDoesNotStartIt() throws Exception {
    CountDownLatch frozen = new CountDownLatch(1);
    CountDownLatch wake = new CountDownLatch(1);
    Once zombie = Once.builder(store).clock(clock).lease(LEASE).listener(new OnceListener() {
      @Override
      public void onAcquired(IdempotencyKey k, long token, boolean takeover) {
        frozen.countDown();
        try {
          wake.await(10, TimeUnit.SECONDS); // SIGSTOP, a long GC pause
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }).build();
    Once successor = Once.builder(store).clock(clock).lease(LEASE).build();
    AtomicReference<Throwable> zombieGot = new AtomicReference<>();
    Thread worker = new Thread(() -> {
      try {
        zombie.execute(key, Fingerprint.of("7"), Codecs.utf8(), a -> send("zombie"));
      } catch (Throwable t) {
        zombieGot.set(t);
      }
    });
    worker.start();
    assertThat(frozen.await(10, TimeUnit.SECONDS)).isTrue();

    clock.advance(LEASE.plusSeconds(1));
    successor.execute(key, Fingerprint.of("7"), Codecs.utf8(), a -> send("successor"));
    wake.countDown();
    worker.join(10_000);

    assertThat(effects).containsExactly("successor");
    assertThat(zombieGot.get()).isInstanceOf(LeaseLostException.class);
  }

  @Test
  void aStepDoesNotStartOnALeaseThatPassedWhileTheWorkerWasAway() {
    Once once = Once.builder(store).clock(clock).lease(LEASE).build();
    Step<String> mail = Step.of("mail", Codecs.utf8());

    assertThatThrownBy(() -> once.execute(key, Fingerprint.of("7"), Codecs.utf8(), a -> {
      clock.advance(LEASE.plusSeconds(1)); // frozen inside the work, before the step
      return a.step(mail, k -> send("zombie"));
    })).isInstanceOf(LeaseLostException.class);
    assertThat(effects).isEmpty();
  }

  private String send(String who) {
    effects.add(who);
    return who;
  }
}
