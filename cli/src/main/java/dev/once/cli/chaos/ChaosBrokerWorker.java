package dev.once.cli.chaos;

import dev.once.Attempt;
import dev.once.FailurePolicy;
import dev.once.Once;
import dev.once.Scheduler;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.jdbc.JdbcStore;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * One worker process of {@code once chaos --broker}, started (and killed, frozen and sent
 * SIGTERM) by the coordinator, {@link ChaosBrokerRun}: {@code java -cp <jar>
 * dev.once.cli.chaos.ChaosBrokerWorker ...}, with the store URI ({@value ChaosWorker#STORE_ENV}) and the
 * broker URI ({@value #BROKER_ENV}) in the environment rather than on a command line that
 * {@code ps} shows.
 *
 * <p>It consumes the run's destination through the broker's Once adapter ({@link ChaosBroker}),
 * over the store under test with a short lease and the heartbeat on. Each event's handler makes
 * two effects in the run's downstream ({@link ChaosDownstream}): an append without
 * deduplication, and an effect deduplicated on {@code Attempt.key()}; then spends the work time.
 * A poison event's handler throws {@link PoisonEvent}, terminal by the {@code Once}'s failure
 * policy, so the adapter dead-letters it.
 *
 * <p>A JVM shutdown hook (what {@code SIGTERM} runs) stops the consumer gracefully, as a service
 * in a rolling deploy does: the message in hand finishes, the rest of its batch is handed back.
 * It also stops, the same way, when the run directory holds the stop file, when the coordinator is
 * gone, or at its deadline. It prints nothing but errors; a consumer that stops on its own (its
 * connection closed for good) is an error, and the process exits with code 1.
 */
@Command(name = "chaos-broker-worker", hidden = true,
    description = "A worker process of once chaos --broker; started by it, not by hand.")
final class ChaosBrokerWorker implements Callable<Integer> {

  @Mixin
  ChaosWorkerOptions common = new ChaosWorkerOptions();

  /** The environment variable holding the broker URI (it may hold a password). */
  static final String BROKER_ENV = "ONCE_CHAOS_BROKER";


  @Option(names = "--broker", required = true)
  String broker;

  @Option(names = "--name", required = true)
  String name;

  @Option(names = "--region", defaultValue = "us-east-1")
  String region;

  @Option(names = "--batch", required = true)
  int batch;

  @Option(names = "--partitions", defaultValue = "1")
  int partitions;

  @Option(names = "--ack-wait-ms", required = true)
  long ackWaitMillis;

  /** Set by the shutdown hook: the JVM is going down (SIGTERM), the consumer is being stopped. */
  private final AtomicBoolean terminating = new AtomicBoolean();

  /** What a poison event's handler throws: terminal, so the adapter dead-letters the event. */
  static final class PoisonEvent extends Exception {
    private static final long serialVersionUID = 1L;

    PoisonEvent(String event) {
      super("poison event " + event + " (once chaos)", null, false, false);
    }
  }


  /** Runs one worker and exits with its code. */
  public static void main(String[] args) {
    ChaosWorkerOptions.quiet("io.lettuce", "io.netty", "io.nats", "com.rabbitmq",
        "software.amazon", "dev.once");
    System.exit(new CommandLine(new ChaosBrokerWorker()).execute(args));
  }

  /** The Once of a worker: the run's lease and retention, the heartbeat, poison terminal. */
  static Once once(OpenStore opened, Duration lease, Duration retention,
      ScheduledExecutorService beats) {
    return Once.builder(opened.store())
        .lease(lease)
        .retention(retention)
        .heartbeat(Scheduler.of(beats))
        .failurePolicy(FailurePolicy.retryAll().terminalOn(PoisonEvent.class))
        .build();
  }

  @Override
  public Integer call() throws Exception {
    String storeText = System.getenv(ChaosWorker.STORE_ENV);
    String brokerUri = System.getenv(BROKER_ENV);
    if (storeText == null || storeText.isBlank() || brokerUri == null || brokerUri.isBlank()) {
      System.err.println("once chaos-broker-worker: no store in " + ChaosWorker.STORE_ENV
          + " or no broker in " + BROKER_ENV);
      return CommandFailure.CANNOT_RUN;
    }
    String table = System.getenv().getOrDefault(ChaosWorker.TABLE_ENV, JdbcStore.DEFAULT_TABLE);
    ChaosBroker.Target target = new ChaosBroker.Target(ChaosBroker.Kind.parse(broker), brokerUri,
        region, name, ChaosWorker.scope(common.runId), batch, Duration.ofMillis(ackWaitMillis),
        partitions);
    ScheduledExecutorService beats = ChaosWorkerOptions.heartbeats();
    try (ChaosDownstream downstream = ChaosDownstream.open(common.runDirectory)) {
      OpenStore opened = common.open(StoreUris.parse(storeText), table);
      if (opened == null) {
        return 0; // stopped before the store could be reached
      }
      try (opened) {
        Once once = once(opened, Duration.ofMillis(common.leaseMillis),
            Duration.ofMillis(common.retentionMillis), beats);
        ChaosBroker.Consumer consumer = start(target, once, (body, attempt) ->
            handle(ChaosBroker.Event.parse(body), attempt, downstream));
        if (consumer == null) {
          return 0;
        }
        Thread hook = new Thread(() -> {
          terminating.set(true);
          consumer.close();
        }, "once-chaos-sigterm");
        Runtime.getRuntime().addShutdownHook(hook);
        while (common.running()) {
          if (terminating.get()) {
            // SIGTERM: the hook stops the consumer, which needs the store and the downstream
            // open until its batch is settled; the JVM halts once the hook is done.
            Thread.sleep(Long.MAX_VALUE);
          }
          if (!consumer.running() && !terminating.get()) {
            System.err.println("once chaos-broker-worker " + common.worker
                + ": the consumer stopped: "
                + consumer.failure());
            return 1;
          }
          ChaosWorkerOptions.pause(50);
        }
        consumer.close();
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
          // the hook runs: it closes again, which does nothing
        }
      }
      return 0;
    } finally {
      beats.shutdownNow();
    }
  }

  /** The handler: poison throws; otherwise the two effects, then the rest of the work. */
  private void handle(ChaosBroker.Event event, Attempt attempt, ChaosDownstream downstream)
      throws PoisonEvent {
    if (event.poison()) {
      throw new PoisonEvent(event.id());
    }
    // What a careful consumer does before an effect the downstream cannot deduplicate: a frozen
    // worker that wakes past its lease stops here instead of appending.
    attempt.ensureLease();
    synchronized (downstream) {
      downstream.append(event.id(), common.worker, attempt.token());
      // --sabotage: a key that changes with every attempt deduplicates nothing.
      String key = common.sabotage ? attempt.key() + "." + attempt.token() : attempt.key();
      downstream.deduplicated(key, event.id(), common.worker, attempt.token());
    }
    // The rest of the work (a slow reply): the window in which a kill leaves effects made and
    // no outcome stored.
    ChaosWorkerOptions.pause(ThreadLocalRandom.current().nextLong(2 * common.workMillis + 1));
  }

  /** The consumer, started again and again while the broker cannot be reached, until stopped. */
  private ChaosBroker.Consumer start(ChaosBroker.Target target, Once once,
      ChaosBroker.Handler handler) {
    ChaosBroker b = ChaosBroker.of(target);
    long complained = 0;
    while (common.running()) {
      try {
        return b.consume(once, handler, name + "-worker-"
            + System.getenv().getOrDefault(ChaosWorkers.SLOT_ENV, Integer.toString(common.worker)));
      } catch (Exception e) {
        long now = System.currentTimeMillis();
        if (now - complained > 10_000) {
          complained = now;
          System.err.println("once chaos-broker-worker " + common.worker + ": cannot consume yet: "
              + ChaosBroker.causes(e));
        }
        ChaosWorkerOptions.pause(500);
      }
    }
    return null;
  }

}
