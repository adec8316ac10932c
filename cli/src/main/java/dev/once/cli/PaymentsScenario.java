package dev.once.cli;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.cli.Broker.Delivery;
import dev.once.cli.DeliveryPlan.Event;
import dev.once.cli.DeliveryPlan.Message;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * Workers consuming payment events from an at-least-once {@link Broker} and charging a
 * {@link PaymentGateway}, run twice over the same {@link DeliveryPlan}: once charging on every
 * delivery, once through {@link Once}.
 *
 * <p>A crash happens after the charge and before the acknowledgement, the worst moment: the money
 * is gone and the broker redelivers. With Once the crashed worker's claim stays IN_PROGRESS (see
 * {@link CrashSimulatingStore}); redeliveries are answered "in progress" until the lease passes,
 * then one takes over with the next fencing token and charges again under the same downstream key,
 * which the gateway deduplicates. Some crashed workers were only paused: they wake up after the
 * takeover and try to store their outcome with their old token, and must be refused.
 */
final class PaymentsScenario {

  /** The scope of the payment keys; each run adds a suffix of its own ({@link DemoCommand}). */
  static final String SCOPE = "payments.charge";

  /** A run that has not drained by then has a bug; stop and report what is unacknowledged. */
  private static final Duration DEADLINE = Duration.ofMinutes(2);
  private static final long POLL_MILLIS = 2;

  private final DeliveryPlan plan;
  private final int workers;
  private final Duration lease;
  private final Duration redeliveryDelay;
  private final IdempotencyStore store;
  private final String scope;
  private volatile Run current;

  /**
   * @param lease the Once lease; the broker redelivers unacknowledged messages after a quarter of
   *              it, so the first redeliveries of a crashed message find its claim still leased
   * @param store where the run with Once keeps its records; left open
   * @param scope the scope of the payment keys: one of this run's own, so that records an earlier
   *              run left in a persistent store never replay into this one
   */
  PaymentsScenario(DeliveryPlan plan, int workers, Duration lease, IdempotencyStore store,
      String scope) {
    this.plan = plan;
    this.workers = workers;
    this.lease = lease;
    this.store = store;
    this.scope = scope;
    Duration quarter = lease.dividedBy(4);
    this.redeliveryDelay = quarter.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : quarter;
  }

  /** Events acknowledged so far by the run under way (for a progress bar); 0 between runs. */
  long acknowledged() {
    Run run = current;
    return run == null ? 0 : plan.events().size() - run.broker.unacknowledged();
  }

  /** Both runs, without Once first. */
  DemoResult run() throws InterruptedException {
    return new DemoResult(runWithoutOnce(), runWithOnce());
  }

  DemoResult.Figures runWithoutOnce() throws InterruptedException {
    return new Run(null, null).execute();
  }

  DemoResult.Figures runWithOnce() throws InterruptedException {
    CrashSimulatingStore crashing = new CrashSimulatingStore(store);
    Once once = Once.builder(crashing).lease(lease).clock(Clock.systemUTC()).build();
    return new Run(once, crashing).execute();
  }

  /** The state of one run: its broker, gateway and counters. */
  private final class Run {
    private final Once once;
    private final CrashSimulatingStore store;
    private final Broker broker = new Broker(plan.messages(), redeliveryDelay);
    private final PaymentGateway gateway = new PaymentGateway(plan.events().size());
    private final AtomicIntegerArray crashesSoFar = new AtomicIntegerArray(plan.messages().size());
    private final ConcurrentHashMap<IdempotencyKey, Queue<Zombie>> zombies =
        new ConcurrentHashMap<>();
    private final LongAdder crashes = new LongAdder();
    private final LongAdder replayed = new LongAdder();
    private final LongAdder inProgress = new LongAdder();
    private final LongAdder takeovers = new LongAdder();
    private final LongAdder fencedZombies = new LongAdder();
    private final LongAdder zombieWritesAccepted = new LongAdder();
    private final AtomicReference<RuntimeException> failure = new AtomicReference<>();
    /** Time spent in Once per delivery, the business logic's own time excluded. */
    private final Latencies addedLatency = new Latencies();
    private Timeline timeline;

    Run(Once once, CrashSimulatingStore store) {
      this.once = once;
      this.store = store;
    }

    DemoResult.Figures execute() throws InterruptedException {
      long start = System.nanoTime();
      long deadline = start + DEADLINE.toNanos();
      timeline = new Timeline(start, DEADLINE);
      current = this;
      List<Thread> threads = new ArrayList<>(workers);
      for (int i = 0; i < workers; i++) {
        Thread thread = new Thread(() -> consume(deadline),
            "once-demo-" + (once == null ? "without" : "with") + "-once-" + i);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
      }
      try {
        for (Thread thread : threads) {
          thread.join();
        }
      } catch (InterruptedException e) {
        threads.forEach(Thread::interrupt);
        throw e;
      }
      Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
      current = null;
      RuntimeException unexpected = failure.get();
      if (unexpected != null) {
        throw unexpected;
      }
      return new DemoResult.Figures(plan.events().size(), broker.deliveries(), crashes.sum(),
          gateway.charged(), gateway.deduplicated(), gateway.doubleCharged(),
          gateway.neverCharged(), replayed.sum(), inProgress.sum(), takeovers.sum(),
          fencedZombies.sum(), zombieWritesAccepted.sum(), broker.unacknowledged(), elapsed,
          once == null ? null : addedLatency.summary(), timeline.buckets());
    }

    private void consume(long deadline) {
      while (failure.get() == null && System.nanoTime() - deadline < 0) {
        Delivery delivery;
        try {
          delivery = broker.poll(POLL_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
        if (delivery == null) {
          if (broker.drained()) {
            return;
          }
          continue;
        }
        try {
          if (once == null) {
            chargeWithoutOnce(delivery);
          } else {
            chargeWithOnce(delivery);
          }
          timeline.count(System.nanoTime());
        } catch (RuntimeException e) {
          // A bug in the demo, not a simulated fault: stop every worker and report it.
          failure.compareAndSet(null, e);
          return;
        }
      }
    }

    private void chargeWithoutOnce(Delivery delivery) {
      Event event = plan.events().get(delivery.message().event());
      gateway.charge(event.index(), event.amountCents(), null);
      if (crashNow(delivery.message()) >= 0) {
        broker.redeliverLater(delivery);
      } else {
        broker.acknowledge(delivery);
      }
    }

    private void chargeWithOnce(Delivery delivery) {
      Message message = delivery.message();
      Event event = plan.events().get(message.event());
      IdempotencyKey key = IdempotencyKey.of(scope, event.id());
      Result<String> result;
      long[] logicNanos = new long[1];
      long started = System.nanoTime();
      try {
        result = once.call(key, Fingerprint.of(event.payload()), Codecs.utf8(), attempt -> {
          long logicStarted = System.nanoTime();
          if (attempt.takeover()) {
            takeovers.increment();
            wakeZombies(key);
          }
          // attempt.key() is the same for every attempt of this key: the gateway sees a
          // takeover's charge as a retry of the crashed worker's, not as a new payment.
          String chargeId = gateway.charge(event.index(), event.amountCents(), attempt.key());
          int crash = crashNow(message);
          if (crash >= 0) {
            store.crash(key, attempt.token());
            if (message.isZombie(crash)) {
              zombies.computeIfAbsent(key, k -> new ConcurrentLinkedQueue<>())
                  .add(new Zombie(attempt.token(), chargeId));
            }
            throw new SimulatedCrash();
          }
          logicNanos[0] = System.nanoTime() - logicStarted;
          return chargeId;
        });
        addedLatency.record(System.nanoTime() - started - logicNanos[0]);
      } catch (SimulatedCrash crashed) {
        broker.redeliverLater(delivery);
        return;
      } catch (RequestInProgressException busy) {
        // Another worker holds the key, alive or not: give the message back, the broker retries.
        addedLatency.record(System.nanoTime() - started);
        inProgress.increment();
        broker.redeliverLater(delivery);
        return;
      } catch (LeaseLostException late) {
        // This worker outlived its own lease and was fenced; the successor's outcome is replayed
        // to the redelivery.
        broker.redeliverLater(delivery);
        return;
      }
      if (result.replayed()) {
        replayed.increment();
      }
      if (crashNow(message) >= 0) {
        // Crashed after a replay, before the acknowledgement: harmless, the redelivery replays.
        broker.redeliverLater(delivery);
      } else {
        broker.acknowledge(delivery);
      }
    }

    /**
     * The paused workers of {@code key} wake up and, as their Once would, try to store the outcome
     * under their old token. The successor holds the key now, so the store must refuse.
     */
    private void wakeZombies(IdempotencyKey key) {
      Queue<Zombie> paused = zombies.get(key);
      if (paused == null) {
        return;
      }
      for (Zombie zombie = paused.poll(); zombie != null; zombie = paused.poll()) {
        Outcome outcome = Outcome.success(Codecs.utf8().mediaType(),
            Codecs.utf8().encode(zombie.chargeId()));
        try {
          once.store().complete(key, zombie.token(), outcome, once.clock().instant(),
              once.config().retention());
          zombieWritesAccepted.increment();
        } catch (LeaseLostException fenced) {
          fencedZombies.increment();
        }
      }
    }

    /**
     * Whether the worker crashes after handling {@code message} this time, as the plan says.
     * Only one worker holds a message at a time, so get-then-set does not race.
     *
     * @return which crash of the message this is (0 for the first), or -1 for none
     */
    private int crashNow(Message message) {
      int n = crashesSoFar.get(message.id());
      if (n >= message.plannedCrashes()) {
        return -1;
      }
      crashesSoFar.set(message.id(), n + 1);
      crashes.increment();
      return n;
    }
  }

  /** A worker paused after charging, still holding its fencing token. */
  private record Zombie(long token, String chargeId) {}

  /** Thrown inside the logic to stop the worker between the charge and the acknowledgement. */
  static final class SimulatedCrash extends RuntimeException {
    SimulatedCrash() {
      // No stack trace: it is thrown on purpose, often, and never printed.
      super("simulated crash after the charge, before the acknowledgement", null, false, false);
    }
  }
}
