package dev.once.cli.chaos;

import dev.once.StoreUnavailableException;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import java.io.IOException;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;

/**
 * {@code once chaos --broker}: the coordinator of a run over a real broker. It declares the run's
 * destination on the broker ({@link ChaosBroker}), publishes events into it (a share twice, as a
 * producer retry does, a share poison), starts worker processes ({@link ChaosBrokerWorker}) that
 * consume it through the broker's Once adapter over the store under test, and meanwhile
 * {@code kill -9}s workers, freezes one past its lease ({@code SIGSTOP}, then {@code SIGCONT}: a
 * zombie), sends {@code SIGTERM} to one every so often (its shutdown hook stops its consumer
 * gracefully mid-batch; a replacement starts) and, as without a broker, restarts a private store
 * and cuts connections through the proxy. Then it stops the faults, lets the workers drain the
 * destination (bounded), stops them and audits ({@link ChaosBrokerAudit}).
 */
final class ChaosBrokerRun {

  /** How often the coordinator asks the broker how many messages wait. */
  private static final long COUNT_MILLIS = 250;
  /**
   * How long the drain's end must hold (every event handled, nothing waiting) before the workers
   * are stopped, when the broker does not count delivered messages not yet acknowledged
   * (RabbitMQ): a duplicate held back (in progress elsewhere) is requeued within a second.
   */
  private static final long SETTLE_MILLIS = 3_000;

  private final ChaosCommand c;
  private final ChaosCommand.Plan plan;
  private final ChaosCommand.BrokerPlan b;
  private final ChaosCommand.Resources r;
  private final PrintWriter out;

  ChaosBrokerRun(ChaosCommand command, ChaosCommand.Plan plan, ChaosCommand.Resources resources) {
    this.c = command;
    this.plan = plan;
    this.b = plan.broker();
    this.r = resources;
    this.out = command.spec.commandLine().getOut();
  }

  /**
   * The run, phase by phase: set up the broker's destination, the store, the downstream and the
   * workers; start the workers and await a first handled event; inject the faults; drain the
   * destination without faults; audit; report. Exit code 0 when Once held, 1 on a violation.
   */
  int run() throws Exception {
    String runId = ChaosCommand.runId();
    SetUp setUp = setUp(runId);
    ChaosBroker broker = setUp.broker();
    if (!c.json) {
      header(broker, setUp.description());
    }
    Random random = new Random();
    Producer producer = new Producer(broker, random);
    awaitFirstEvent(producer);
    ChaosFaultLoop faults = injectFaults(random, producer);
    Drain drain = drain(broker, faults, producer);
    ChaosBrokerAudit.Result result = audit(runId, setUp, producer, faults, drain);
    c.lastBrokerResult = result;
    if (!result.held() || c.keep || c.directory != null) {
      r.deleteDirectory = false;
    }
    report(result, runId, broker);
    return result.held() ? 0 : 1;
  }

  /**
   * What {@link #setUp} made ready.
   *
   * @param description the store's description for the header
   */
  private record SetUp(ChaosBroker broker, StoreUri uri, String description) {}

  /**
   * The broker connected and the run's destinations declared on it, the store under test with
   * its schema, the downstream, and the workers, not started yet; all of it held in {@code r}.
   */
  private SetUp setUp(String runId) throws Exception {
    String name = "once-chaos-" + runId;
    Duration ackWait = Duration.ofMillis(plan.visibilityMillis());
    int partitions = Math.max(2, 2 * c.workers);
    ChaosBroker.Target target = new ChaosBroker.Target(b.kind(), b.uri(), b.region(), name,
        ChaosWorker.scope(runId), b.batch(), ackWait, partitions);
    ChaosBroker broker = ChaosBroker.of(target);
    r.broker = broker;
    broker.connect();

    StoreUri uri = c.storeUnderTest(plan, r);
    String description = c.setUpStore(uri, r, opened -> { });
    String workerUri = c.workerStoreUri(uri, r);
    try {
      broker.create();
    } catch (Exception e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot declare the run's "
          + "destinations on " + b.kind().title + ": " + ChaosBroker.causes(e));
    }
    r.deleteTopology = !c.keep;
    r.downstream = ChaosDownstream.open(r.directory);
    r.workers = workers(runId, name, ackWait, partitions, workerUri);
    return new SetUp(broker, uri, description);
  }

  /** The worker processes of the run, consuming destination {@code name}; not started yet. */
  private ChaosWorkers workers(String runId, String name, Duration ackWait, int partitions,
      String workerUri) throws IOException {
    List<String> command = ChaosCommand.workerCommand(plan, r, ChaosBrokerWorker.class, runId,
        List.of("--broker", b.kind().option(), "--name", name, "--region", b.region(),
            "--batch", Integer.toString(b.batch()), "--partitions", Integer.toString(partitions),
            "--ack-wait-ms", Long.toString(ackWait.toMillis())));
    if (c.sabotage) {
      command.add("--sabotage");
    }
    return new ChaosWorkers(command, Map.of(ChaosWorker.STORE_ENV, workerUri,
        ChaosWorker.TABLE_ENV, c.table, ChaosBrokerWorker.BROKER_ENV, b.uri()), r.directory,
        c.workers);
  }

  /** Publishes a first batch, starts the workers and waits until one of them handled an event. */
  private void awaitFirstEvent(Producer producer) throws Exception {
    producer.topUp(System.currentTimeMillis());
    r.workers.startAll();
    ChaosFaultLoop.awaitFirst(r, c.workers, "handled an event",
        () -> ChaosBrokerAudit.handled(r.downstream) > 0, producer::topUp);
  }

  /**
   * Kills, freezes, SIGTERMs, restarts and cuts for --duration while the producer keeps messages
   * waiting, printing a status line every so often; returns the loop, which counted what it did.
   */
  private ChaosFaultLoop injectFaults(Random random, Producer producer) throws Exception {
    ChaosFaultLoop faults = new ChaosFaultLoop(plan, b.term(), r, c.workers, c.json, out,
        random);
    faults.run(producer::topUp, (seconds, f) -> String.format(Locale.ROOT,
        "  %3ds: %d events handled, %d kills, %d freezes, %d SIGTERMs, %d store restarts, "
            + "%d messages waiting", seconds, ChaosBrokerAudit.handled(r.downstream), f.kills(),
        f.freezes(), f.terms(), f.restarts(), producer.lastWaiting));
    return faults;
  }

  /**
   * How the drain ended.
   *
   * @param end       when it ended (epoch millis)
   * @param unsettled what the broker still held once the workers stopped
   */
  private record Drain(long end, long unsettled) {}

  /**
   * Without faults, publishes the duplicates still due and lets the workers handle or
   * dead-letter every event until the broker settled (within --drain-timeout of the faults' end),
   * then stops them and asks the broker what it still holds.
   */
  private Drain drain(ChaosBroker broker, ChaosFaultLoop faults, Producer producer)
      throws Exception {
    faults.calm();
    producer.flushDuplicates();
    long drainDeadline = faults.end() + plan.drain().toMillis();
    long settle = broker.countsUnacknowledged() ? 500 : SETTLE_MILLIS;
    long quietSince = -1;
    while (System.currentTimeMillis() < drainDeadline) {
      r.workers.replaceExited();
      Thread.sleep(200);
      long now = System.currentTimeMillis();
      boolean done = ChaosBrokerAudit.handled(r.downstream) >= producer.nonPoison()
          && brokerCount(broker::unsettled) == 0;
      if (!done) {
        quietSince = -1;
      } else if (quietSince < 0) {
        quietSince = now;
      } else if (now - quietSince >= settle) {
        break;
      }
    }
    long drainEnd = System.currentTimeMillis();
    r.workers.stop();
    return new Drain(drainEnd, settled(broker));
  }

  /**
   * Audits what every published event did: the downstream, the dead letters read back from the
   * broker, the store (opened again, it may be coming back from a restart) and what the broker
   * still holds, with the faults counted.
   */
  private ChaosBrokerAudit.Result audit(String runId, SetUp setUp, Producer producer,
      ChaosFaultLoop faults, Drain drain) throws InterruptedException {
    ChaosBroker broker = setUp.broker();
    long start = faults.start();
    long faultEnd = faults.end();
    ChaosBrokerAudit.Faults counted = new ChaosBrokerAudit.Faults(faults.kills(),
        faults.freezes(), faults.terms(), r.workers.termTimeouts(), faults.restarts(),
        r.proxy == null ? 0 : r.proxy.cuts(), r.proxy == null ? 0 : r.proxy.delays(),
        r.workers.started(),
        r.workers.exitedByThemselves(), (faultEnd - start) / 1000.0,
        (drain.end() - faultEnd) / 1000.0, start, faultEnd);
    Map<String, Integer> letters;
    try {
      letters = broker.deadLettersByEvent();
    } catch (Exception e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot read the dead letters back "
          + "from " + b.kind().title + ": " + ChaosBroker.causes(e));
    }
    try {
      r.opened = c.reopen(setUp.uri());
      return ChaosBrokerAudit.audit(runId, producer.published(), r.downstream, letters,
          r.opened.store(), drain.unsettled(), broker.countsUnacknowledged(), counted);
    } catch (StoreUnavailableException | SQLException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot audit the run: "
          + StoreUris.causeMessage(e));
    }
  }

  /** A count from the broker; a broker that fails here ends the run (exit code 2). */
  private long brokerCount(BrokerCall call) {
    try {
      return call.get();
    } catch (Exception e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, b.kind().title + " failed during the "
          + "run: " + ChaosBroker.causes(e));
    }
  }

  @FunctionalInterface
  private interface BrokerCall {
    long get() throws Exception;
  }

  /**
   * What the broker still holds once the workers stopped (their consumers handed back what they
   * had not settled): asked again for a few seconds while above zero, as acks travel.
   */
  private long settled(ChaosBroker broker) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 5_000;
    long n = brokerCount(broker::unsettled);
    while (n > 0 && System.currentTimeMillis() < deadline) {
      Thread.sleep(250);
      n = brokerCount(broker::unsettled);
    }
    return n;
  }

  /**
   * Keeps enough messages waiting on the broker that no worker idles, within
   * {@link ChaosCommand#MAX_EVENTS}; publishes a share of the events a second time a little
   * later (in flight or done by then), as a producer retrying a publish whose acknowledgement it
   * missed does.
   */
  private final class Producer {
    private final ChaosBroker broker;
    private final Random random;
    private final Map<String, int[]> copies = new LinkedHashMap<>();
    private final Map<String, Boolean> poison = new LinkedHashMap<>();
    private final PriorityQueue<Due> duplicates = new PriorityQueue<>();
    private long nextCount;
    private int produced;
    private long nonPoison;
    long lastWaiting;

    private record Due(long at, ChaosBroker.Event event) implements Comparable<Due> {
      @Override
      public int compareTo(Due o) {
        return Long.compare(at, o.at);
      }
    }

    Producer(ChaosBroker broker, Random random) {
      this.broker = broker;
      this.random = random;
    }

    void topUp(long now) {
      List<ChaosBroker.Event> batch = new ArrayList<>();
      while (!duplicates.isEmpty() && duplicates.peek().at() <= now) {
        batch.add(duplicates.poll().event());
      }
      if (now >= nextCount) {
        nextCount = now + COUNT_MILLIS;
        lastWaiting = brokerCount(broker::waiting);
        long missing = 2L * c.workers * b.batch() - lastWaiting;
        for (int i = 0; i < missing && produced < ChaosCommand.MAX_EVENTS; i++) {
          produced++;
          ChaosBroker.Event event = new ChaosBroker.Event(String.format(Locale.ROOT,
              "event-%07d", produced), random.nextDouble() < b.poison());
          batch.add(event);
          if (random.nextDouble() < c.duplicates) {
            duplicates.add(new Due(now + random.nextInt((int) plan.lease().toMillis() * 2 + 1),
                event));
          }
        }
      }
      publish(batch);
    }

    void flushDuplicates() {
      List<ChaosBroker.Event> batch = new ArrayList<>();
      while (!duplicates.isEmpty()) {
        batch.add(duplicates.poll().event());
      }
      publish(batch);
    }

    private void publish(List<ChaosBroker.Event> batch) {
      if (batch.isEmpty()) {
        return;
      }
      try {
        broker.publish(batch);
      } catch (Exception e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "publishing to " + b.kind().title
            + " failed: " + ChaosBroker.causes(e));
      }
      for (ChaosBroker.Event e : batch) {
        int[] n = copies.computeIfAbsent(e.id(), id -> new int[1]);
        if (n[0]++ == 0) {
          poison.put(e.id(), e.poison());
          nonPoison += e.poison() ? 0 : 1;
        }
      }
    }

    /** Events published (at least once): those not poison must all be handled. */
    long nonPoison() {
      return nonPoison;
    }

    List<ChaosBrokerAudit.Published> published() {
      List<ChaosBrokerAudit.Published> list = new ArrayList<>();
      copies.forEach((id, n) -> list.add(new ChaosBrokerAudit.Published(id, poison.get(id),
          n[0])));
      return list;
    }
  }

  private void header(ChaosBroker broker, String description) {
    out.printf(Locale.ROOT, "once chaos: %d worker processes consuming from %s for %s, lease %s "
            + "with heartbeat, %s of events published twice (%s), %s poison%s%n", c.workers,
        b.kind().title, ChaosTime.format(plan.duration()), ChaosTime.format(plan.lease()),
        ChaosCommand.percent(c.duplicates), broker.keyDescription(),
        ChaosCommand.percent(b.poison()),
        c.sabotage ? ", SABOTAGED (downstream key changes per attempt)" : "");
    out.printf(Locale.ROOT, "broker: %s%n", broker.describe());
    out.printf(Locale.ROOT, "consumer: %s, batches of up to %d (one claimAll each)%n",
        switch (b.kind()) {
          case RABBITMQ -> "IdempotentRabbitConsumer (manual acks, prefetch)";
          case NATS -> "IdempotentNatsConsumer (pull fetches, in-progress acks)";
          case KAFKA -> "IdempotentConsumer and its poll loop (manual commits)";
          case SQS -> "IdempotentSqsConsumer (visibility extended while a batch runs)";
        }, b.batch());
    out.printf(Locale.ROOT, "store: %s%n", description);
    out.printf(Locale.ROOT, "faults: %s%n", ChaosFaultLoop.describe(plan, b.term(), r.proxy,
        "a store connection"));
    out.flush();
  }

  private void report(ChaosBrokerAudit.Result result, String runId, ChaosBroker broker) {
    PrintWriter err = c.spec.commandLine().getErr();
    for (String v : result.violations()) {
      err.println("once chaos: VIOLATION: " + v);
    }
    err.flush();
    ChaosBrokerAudit.Figures f = result.figures();
    if (c.json) {
      out.println(ChaosBrokerAudit.json(f)
          .put("run", runId)
          .put("broker", b.kind().option())
          .put("broker_uri", ChaosBroker.display(b.uri()))
          .put("destination", broker.target.name())
          .put("store", r.uri.display())
          .put("workers", c.workers)
          .put("batch", b.batch())
          .put("sabotage", c.sabotage)
          .put("held", result.held())
          .put("violations", result.violations())
          .put("run_directory", r.deleteDirectory ? null : r.directory.toString()));
      out.flush();
      return;
    }
    out.println();
    ChaosBrokerAudit.print(out, f, c.sabotage);
    out.println();
    if (result.held()) {
      out.printf(Locale.ROOT, "Once held on %s: every one of %d events made its deduplicated "
              + "effect exactly once, each of the %d poison events was dead-lettered, none was "
              + "lost, and the broker drained.%n", b.kind().title, f.events() - f.poison(),
          f.poison());
    } else {
      out.printf(Locale.ROOT, "Once did NOT hold: %d violation%s (on stderr).%n",
          result.violations().size(), result.violations().size() == 1 ? "" : "s");
    }
    if (!r.deleteTopology) {
      out.printf(Locale.ROOT, "Broker destinations kept: %s%n", broker.target.name());
    }
    if (!r.deleteDirectory) {
      out.printf(Locale.ROOT, "Run directory kept: %s%n", r.directory);
    }
    out.flush();
  }
}
