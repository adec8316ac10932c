package dev.once.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Paths where callers queued in a {@link Coalescer} were left unanswered or wronged (found by a
 * review): a checked exception from a batch, a leader's interrupt failing others' requests.
 */
class CoalescerFailurePathsTest {

  private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r);
    t.setDaemon(true);
    return t;
  });
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  private String holding(String request) {
    if (request.startsWith("hold")) {
      entered.countDown();
      await(release);
    }
    return request.toUpperCase();
  }

  /**
   * A store written in Kotlin (or with a sneaky throw) can throw a checked exception from
   * claimAll: run() catches only RuntimeException and Error, so the exception leaves the leader,
   * and the other callers of its batch, already out of the queue, wait forever.
   */
  @Test
  void aCheckedExceptionFromABatchCallAnswersEveryCallerOfTheBatch() throws Exception {
    Coalescer<String, String> coalescer = new Coalescer<>(8, 1, 1,
        new Coalescer.Demand(), System::nanoTime, 0, this::holding, requests -> {
          throw CoalescerFailurePathsTest.<RuntimeException>sneaky(
              new java.io.IOException("connection reset"));
        });
    Future<String> first = threads.submit(() -> coalescer.call("hold-first"));
    await(entered);
    List<Future<String>> queued = new ArrayList<>();
    for (String r : List.of("b", "c", "d")) {
      queued.add(threads.submit(() -> coalescer.call(r)));
      waitUntilQueued(coalescer, queued.size());
    }

    release.countDown(); // hands the slot to b, which calls the batch [b, c, d]: it throws

    assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("HOLD-FIRST");
    int unanswered = 0;
    for (Future<String> f : queued) {
      try {
        f.get(10, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException answeredWithAFailure) {
        // fine: it learned of the failure
      } catch (TimeoutException e) {
        unanswered++;
      }
    }
    assertThat(unanswered).as("callers of the failed batch never answered").isZero();
  }

  /**
   * A caller whose thread is already interrupted, arriving while requests queue and a slot is
   * free (the demand, counting the sibling's callers, just fell), leads a batch of others' requests
   * with its interrupt still set. A store whose call fails on an interrupted thread (HikariCP
   * waiting for a connection, JdbcEngine's pause between retries) then fails the other callers
   * for this caller's interrupt. (A caller woken to LEAD clears it first; this path does not.)
   */
  @Test
  void anInterruptedCallerDoesNotFailOtherCallersRequests() throws Exception {
    Coalescer.Demand demand = new Coalescer.Demand();
    java.util.function.Function<String, String> interruptible = r -> {
      if (Thread.currentThread().isInterrupted()) {
        throw new IllegalStateException("interrupted during connection acquisition");
      }
      return holding(r);
    };
    Coalescer<String, String> coalescer = new Coalescer<>(8, 3, 1,
        demand, System::nanoTime, 0, interruptible,
        rs -> {
          if (Thread.currentThread().isInterrupted()) {
            throw new IllegalStateException("interrupted during connection acquisition");
          }
          return rs.stream().map(String::toUpperCase).toList();
        });
    Future<String> first = threads.submit(() -> coalescer.call("hold-first"));
    await(entered);
    demand.addCallersForTest(10); // ten callers in the sibling: above callsAlone, one slot
    Future<String> other = threads.submit(() -> coalescer.call("other"));
    waitUntilQueued(coalescer, 1);
    demand.addCallersForTest(-10); // the sibling's callers are done

    Future<String> interrupted = threads.submit(() -> {
      Thread.currentThread().interrupt();
      try {
        return coalescer.call("mine");
      } finally {
        Thread.interrupted();
      }
    });
    try {
      assertThat(other.get(10, TimeUnit.SECONDS))
          .as("another caller's answer, whatever the thread that led its batch").isEqualTo("OTHER");
    } finally {
      release.countDown();
      first.get(10, TimeUnit.SECONDS);
      try {
        interrupted.get(10, TimeUnit.SECONDS);
      } catch (Exception ignored) {
        // its own failure is fine
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneaky(Throwable e) throws E {
    throw (E) e;
  }

  private static void await(CountDownLatch latch) {
    try {
      assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void waitUntilQueued(Coalescer<?, ?> coalescer, int n) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (coalescer.queued() < n) {
      assertThat(System.nanoTime()).as("%d requests queued in time", n).isLessThan(deadline);
      Thread.onSpinWait();
      Thread.yield();
    }
  }
}
