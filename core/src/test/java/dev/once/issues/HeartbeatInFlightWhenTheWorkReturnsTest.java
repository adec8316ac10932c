package dev.once.issues;

import static dev.once.issues.TestParts.awaitTrue;
import static org.assertj.core.api.Assertions.assertThat;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InMemoryStore;
import dev.once.Once;
import dev.once.OnceListener;
import dev.once.spi.Status;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Issue 23, scenario 6: a heartbeat already extending the lease when the work returns must not
 * report a lost lease for a successful call. Cancelling the beat used not to wait for one in
 * flight: the completion went first, the beat's extend then found the record COMPLETED, and the
 * call was told (listener, log, metrics) its lease was lost.
 */
class HeartbeatInFlightWhenTheWorkReturnsTest {

  @Test
  void aBeatInFlightWhenTheWorkReturnsFinishesBeforeTheCompletionAndReportsNoLostLease()
      throws Exception {
    TestParts.HandScheduler scheduler = new TestParts.HandScheduler();
    CountDownLatch extendEntered = new CountDownLatch(1);
    CountDownLatch releaseExtend = new CountDownLatch(1);
    AtomicBoolean completeCalled = new AtomicBoolean();
    InMemoryStore memory = new InMemoryStore();
    List<IdempotencyKey> lost = new CopyOnWriteArrayList<>();
    Once once = Once.builder(TestParts.hooked(memory, (method, args) -> {
      if (method.equals("extend")) {
        extendEntered.countDown();
        assertThat(releaseExtend.await(10, TimeUnit.SECONDS)).isTrue();
      } else if (method.equals("complete")) {
        completeCalled.set(true);
      }
    })).heartbeat(scheduler).listener(new OnceListener() {
      @Override
      public void onLeaseLost(IdempotencyKey key, long token) {
        lost.add(key);
      }
    }).build();
    IdempotencyKey key = IdempotencyKey.of("orders", "o-1");
    Thread beat = new Thread(scheduler::beat, "beat");
    AtomicReference<Throwable> callFailed = new AtomicReference<>();
    Thread call = new Thread(() -> {
      try {
        once.execute(key, Fingerprint.of("o-1"), Codecs.utf8(), attempt -> {
          beat.start(); // the heartbeat fires while the work is finishing
          assertThat(extendEntered.await(10, TimeUnit.SECONDS)).isTrue();
          return "shipped";
        });
      } catch (Throwable t) {
        callFailed.set(t);
      }
    }, "call");
    call.start();

    // The call either waits for the beat (fixed) or completes behind its back (the bug).
    awaitTrue(() -> completeCalled.get() || call.getState() == Thread.State.WAITING
        || call.getState() == Thread.State.TERMINATED, "the call waits for the beat or completes");
    releaseExtend.countDown();
    call.join(10_000);
    beat.join(10_000);

    assertThat(callFailed.get()).isNull();
    assertThat(memory.find(key).orElseThrow().status()).isEqualTo(Status.COMPLETED);
    assertThat(lost).as("a lease lost reported for a call that completed").isEmpty();
    assertThat(scheduler.scheduled()).isZero();
  }
}
