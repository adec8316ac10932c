package dev.once.cli.demo;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.Step;
import dev.once.cli.demo.Broker.Delivery;
import dev.once.cli.demo.DeliveryPlan.Event;
import dev.once.cli.demo.DeliveryPlan.Message;
import dev.once.cli.support.Latencies;
import dev.once.spi.IdempotencyStore;
import dev.once.spi.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * Workers consuming payment events from an at-least-once {@link Broker}, charging a
 * {@link PaymentGateway} and mailing a receipt, run twice over the same {@link DeliveryPlan}: once
 * charging on every delivery, once through {@link Once}.
 *
 * <p>A crash happens after the charge and the receipt and before the acknowledgement, the worst
 * moment: the money is gone, the mail is out, and the broker redelivers. With Once the crashed
 * worker's claim stays IN_PROGRESS (see {@link CrashSimulatingStore}); redeliveries are answered
 * "in progress" until the lease passes, then one takes over with the next fencing token and runs
 * the work again. The charge goes again under the same downstream key, which the gateway
 * deduplicates. Some crashed workers were only paused: they wake up after the takeover and try to
 * store their outcome with their old token, and must be refused.
 *
 * <p>The receipt goes to a {@link ReceiptMailer}, which has no idempotency: every call is a mail.
 * Each worker mails it three ways, to three such mailers, so that all three face the same crashes:
 * inside the work (a takeover mails again), inside the work with {@code attempt.key()} (ignored:
 * mails again too), and in a durable {@link Step} whose reconciler searches the mailer by the step
 * key. The crash strikes inside that step, after its mail and before its result is journaled: the
 * takeover finds the step started, asks the mailer, finds the mail and does not send it again.
 */
final class PaymentsScenario {

  /** The scope of the payment keys; each run adds a suffix of its own ({@link DemoCommand}). */
  static final String SCOPE = "payments.charge";

  /** The durable step that mails the receipt; its name is part of the step key. */
  static final String RECEIPT_STEP = "receipt";

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

  /**
   * Messages acknowledged so far by the run under way, from 0 to {@link #messages()} (for a
   * progress bar); 0 between runs.
   */
  long acknowledged() {
    Run run = current;
    return run == null ? 0 : run.broker.acknowledged();
  }

  /** Messages each run must acknowledge: every copy of every event. */
  int messages() {
    return plan.messages().size();
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

  /** The state of one run: its broker, gateway, mailers and counters. */
  private final class Run {
    private final Once once;
    private final CrashSimulatingStore store;
    private final Broker broker = new Broker(plan.messages(), redeliveryDelay);
    private final PaymentGateway gateway = new PaymentGateway(plan.events().size());
    /** Three mailers without idempotency, one per way of sending the receipt. */
    private final ReceiptMailer mailedInWork = new ReceiptMailer(plan.events().size());
    private final ReceiptMailer mailedWithKey = new ReceiptMailer(plan.events().size());
    private final ReceiptMailer mailedInStep = new ReceiptMailer(plan.events().size());
    private final LongAdder reconciled = new LongAdder();
    private final LongAdder stepReplayed = new LongAdder();
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
    /** Time spent in Once per delivery, the downstream calls' own time excluded. */
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
      DemoResult.Receipts receipts = once == null
          ? new DemoResult.Receipts(mailedInWork.mails(), null, null, 0, 0)
          : new DemoResult.Receipts(mailedInWork.mails(), mailedWithKey.mails(),
              mailedInStep.mails(), reconciled.sum(), stepReplayed.sum());
      return new DemoResult.Figures(plan.events().size(), broker.deliveries(), crashes.sum(),
          gateway.charged(), gateway.deduplicated(), gateway.doubleCharged(),
          gateway.neverCharged(), replayed.sum(), inProgress.sum(), takeovers.sum(),
          fencedZombies.sum(), zombieWritesAccepted.sum(), broker.unacknowledged(), elapsed,
          once == null ? null : addedLatency.summary(), receipts, timeline.buckets());
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
      mailedInWork.send(event.index(), null);
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
      // Time in the downstream calls, which the added latency leaves out.
      long[] downstreamNanos = new long[1];
      long started = System.nanoTime();
      try {
        result = once.call(key, Fingerprint.of(event.payload()), Codecs.utf8(), attempt -> {
          if (attempt.takeover()) {
            takeovers.increment();
            wakeZombies(key);
          }
          long t0 = System.nanoTime();
          // attempt.key() is the same for every attempt of this key: the gateway sees a
          // takeover's charge as a retry of the crashed worker's, not as a new payment.
          String chargeId = gateway.charge(event.index(), event.amountCents(), attempt.key());
          // 1. The receipt inside the work: a takeover runs the work, so mails it again.
          mailedInWork.send(event.index(), null);
          // 2. The same with attempt.key(), which this mailer ignores: a key only helps a
          //    downstream that deduplicates by it.
          mailedWithKey.send(event.index(), attempt.key());
          downstreamNanos[0] += System.nanoTime() - t0;
          // 3. A durable step: its start and its result are journaled under the token, and a
          //    takeover that finds it started asks the mailer by the step key before sending.
          boolean[] crashChecked = {false};
          boolean[] askedMailer = {false};
          Step<String> receipt = Step.of(RECEIPT_STEP, Codecs.utf8()).reconcile(stepKey -> {
            askedMailer[0] = true;
            return findReceipt(stepKey);
          });
          attempt.step(receipt, stepKey -> {
            // The guard before an effect no key deduplicates: a worker whose lease ran out stops
            // here rather than mail alongside the successor that took over.
            attempt.ensureLease();
            long t1 = System.nanoTime();
            String mailId = mailedInStep.send(event.index(), stepKey);
            downstreamNanos[0] += System.nanoTime() - t1;
            // The crash, if one is planned, strikes here: after the step's mail, before its result
            // is journaled, the window only the reconciler closes.
            crashChecked[0] = true;
            crashIfPlanned(message, key, attempt.token(), chargeId);
            return mailId;
          });
          if (!crashChecked[0]) {
            if (!askedMailer[0]) {
              // Neither run nor reconciled: an earlier attempt journaled its result.
              stepReplayed.increment();
            }
            // The step did not run: the crash, if one is planned, strikes after it instead.
            crashIfPlanned(message, key, attempt.token(), chargeId);
          }
          return chargeId;
        });
        addedLatency.record(System.nanoTime() - started - downstreamNanos[0]);
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
     * The worker dies now if the plan says so: its release never reaches the store, and a paused
     * one is kept to wake up later with its token.
     */
    private void crashIfPlanned(Message message, IdempotencyKey key, long token,
        String chargeId) {
      int crash = crashNow(message);
      if (crash < 0) {
        return;
      }
      store.crash(key, token);
      if (message.isZombie(crash)) {
        zombies.computeIfAbsent(key, k -> new ConcurrentLinkedQueue<>())
            .add(new Zombie(token, chargeId));
      }
      throw new SimulatedCrash();
    }

    /** The receipt step's reconciler: did a crashed attempt mail it? Asks the mailer. */
    private Optional<String> findReceipt(String stepKey) {
      Optional<String> found = mailedInStep.find(stepKey);
      if (found.isPresent()) {
        reconciled.increment();
      }
      return found;
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

  /** A worker paused after the charge and the receipts, still holding its fencing token. */
  private record Zombie(long token, String chargeId) {}

  /** Thrown inside the logic to stop the worker between the effects and the acknowledgement. */
  static final class SimulatedCrash extends RuntimeException {
    SimulatedCrash() {
      // No stack trace: it is thrown on purpose, often, and never printed.
      super("simulated crash after the charge and the receipts, before the acknowledgement", null,
          false, false);
    }
  }
}
