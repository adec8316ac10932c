package dev.once.cli.chaos;

import dev.once.StoreUnavailableException;
import dev.once.cli.chaos.ChaosQueue.HarnessFailure;
import dev.once.cli.store.StoreUris.Kind;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.jdbc.JdbcStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code once chaos}: proves Once's guarantees on a store the user names, the way an audit would.
 * Worker processes (separate JVMs, {@link ChaosWorker}) consume events from a durable
 * at-least-once queue ({@link ChaosQueue}) that redelivers and carries duplicates, and run each
 * through {@code Once} over the store under test, making effects downstream
 * ({@link ChaosDownstream}) and, on a SQL store, a transactional debit ({@link ChaosLedger}).
 * Meanwhile this process, the coordinator, {@code kill -9}s a worker every few seconds and starts
 * a replacement, freezes one with {@code SIGSTOP} past its lease and wakes it as a zombie, and
 * optionally kills and restarts a store it started itself ({@link ChaosPrivateStore}) and cuts
 * and delays connections through a proxy ({@link ChaosProxy}). After the faults it drains the
 * queue and audits ({@link ChaosAudit}): exit 0 when Once held, 1 on any violation, 2 for bad
 * options or a store that cannot be used.
 *
 * <p>Everything it starts listens on 127.0.0.1 only, every loop is bounded in time, and every
 * process it started is killed at the end, also on Ctrl-C (a shutdown hook).
 */
@Command(name = "chaos", mixinStandardHelpOptions = true, version = "0.1.0-SNAPSHOT",
    sortOptions = false, showDefaultValues = true,
    header = "Proves Once on a store: workers killed, frozen and cut off, then an audit.",
    description = {
        "Starts worker processes over a durable at-least-once queue (SQLite, with visibility "
            + "timeouts, redelivery and duplicated events); each runs every event through Once "
            + "over the store, making an effect without dedupe, one deduplicated on "
            + "Attempt.key() and, on SQL stores, a transactional debit.",
        "Meanwhile it kill -9s a worker every few seconds, freezes one (SIGSTOP) past its lease "
            + "and wakes it as a zombie, and with --restart-store and --proxy kills and restarts "
            + "a store it started itself and cuts connections. Then it drains the queue and "
            + "audits what every event did.",
        "With --broker, the workers consume from a real RabbitMQ, NATS JetStream, Kafka or SQS "
            + "through Once's adapter for it instead; a share of the events are poison and must "
            + "end dead-lettered once, and SIGTERM stops a worker gracefully mid-batch.",
        "Exit code 0 when Once held (exactly one deduplicated effect and debit per event, no "
            + "lost event, one outcome per event, poison dead-lettered); 1 on any violation; 2 "
            + "for bad options or a store or broker that cannot be used."})
public final class ChaosCommand implements Callable<Integer> {

  static final int MAX_WORKERS = 32;
  static final Duration MAX_DURATION = Duration.ofHours(1);
  /** Messages kept waiting in the queue per worker: enough that no worker ever idles. */
  static final int BACKLOG_PER_WORKER = 20;
  static final int MAX_EVENTS = 1_000_000;
  /** How long the workers may take to finish a first delivery before the run gives up. */
  static final long START_MILLIS = 90_000;

  @Spec
  CommandSpec spec;

  @Option(names = "--store", paramLabel = "URI",
      description = {
          "The store under test: any URI of the other commands (sqlite:PATH, postgres://..., "
              + "mariadb://..., redis://..., redis-cluster://..., dynamodb://...), or a server "
              + "this command starts, kills and restarts itself: private:redis (redis-server, "
              + "appendfsync always) or private:postgres (the machine's initdb and pg_ctl).",
          "Default: a SQLite file in the run directory."})
  String store;

  @Option(names = "--table", defaultValue = JdbcStore.DEFAULT_TABLE, paramLabel = "NAME",
      description = "The records table of a SQL or DynamoDB store (created if missing).")
  String table = JdbcStore.DEFAULT_TABLE;

  @Option(names = "--broker", paramLabel = "KIND",
      description = {
          "Audit a real broker instead of the built-in queue: rabbitmq, nats, kafka or sqs. The "
              + "workers consume a queue, stream or topic declared for the run (and deleted "
              + "after it) through Once's adapter for the broker, batch by batch; a share of "
              + "the events are poison (dead-lettered); SIGTERM joins the faults."})
  String broker;

  @Option(names = "--broker-uri", paramLabel = "URI",
      description = {
          "Where the broker is, as its client takes it: amqp://user:password@host:5672/vhost "
              + "(RabbitMQ), nats://host:4222 (NATS with JetStream), host:9092,host2:9092 "
              + "(Kafka bootstrap servers), an SQS endpoint URL (https://sqs.REGION.amazonaws"
              + ".com, or http://127.0.0.1:9324 for ElasticMQ).",
          "Default: the broker's usual port on 127.0.0.1 (RabbitMQ as guest)."})
  String brokerUri;

  @Option(names = "--region", paramLabel = "REGION",
      description = "The SQS region. Default: AWS_REGION, else us-east-1.")
  String region;

  @Option(names = "--batch", paramLabel = "N",
      description = "With --broker: the prefetch, fetch or poll size (1-1000), so the most "
          + "messages one store call claims. Default: 20.")
  Integer batch;

  @Option(names = "--poison", paramLabel = "SHARE",
      description = "With --broker: share of events whose handler throws a terminal failure "
          + "(0.0-0.5); each must end dead-lettered. Default: 0.01.")
  Double poison;

  @Option(names = "--workers", defaultValue = "4", paramLabel = "N",
      description = "Worker processes (1-" + MAX_WORKERS + "); a killed one is replaced.")
  int workers = 4;

  @Option(names = "--duration", defaultValue = "3m", paramLabel = "TIME",
      description = "How long faults are injected (up to 1h); then the queue drains without "
          + "faults and the audit runs.")
  String duration = "3m";

  @Option(names = "--lease", defaultValue = "2s", paramLabel = "TIME",
      description = "Once's lease (heartbeat on). The queue's visibility timeout is the lease "
          + "plus 1 s, so a dead worker's message comes back after its lease passed.")
  String lease = "2s";

  @Option(names = "--work", defaultValue = "20ms", paramLabel = "TIME",
      description = "Mean time the work spends after its effects (a slow reply): the window in "
          + "which a kill leaves effects made and no outcome stored.")
  String work = "20ms";

  @Option(names = "--duplicates", defaultValue = "0.2", paramLabel = "SHARE",
      description = "Share of events the producer enqueues twice (0.0-1.0).")
  double duplicates = 0.2;

  @Option(names = "--kill-every", defaultValue = "1s-3s", paramLabel = "RANGE",
      description = "kill -9 a random worker (and start a replacement) after a random time in "
          + "this range, again and again; off to disable.")
  String killEvery = "1s-3s";

  @Option(names = "--freeze-every", defaultValue = "5s-15s", paramLabel = "RANGE",
      description = "SIGSTOP a random worker after a random time in this range, for "
          + "--freeze-for, then SIGCONT it; off to disable.")
  String freezeEvery = "5s-15s";

  @Option(names = "--freeze-for", paramLabel = "TIME",
      description = "How long a worker stays frozen. Default: twice the lease plus 1 s, so its "
          + "message is redelivered and taken over before it wakes.")
  String freezeFor;

  @Option(names = "--term-every", paramLabel = "RANGE",
      description = "With --broker: SIGTERM a random worker (its shutdown hook stops its "
          + "consumer gracefully, mid-batch; a replacement starts) after a random time in this "
          + "range, again and again; off to disable. Default: 3s-6s.")
  String termEvery;

  @Option(names = "--restart-store",
      description = "kill -9 the store and start it again (private:redis or private:postgres "
          + "only) every --restart-every.")
  boolean restartStore;

  @Option(names = "--restart-every", defaultValue = "15s-30s", paramLabel = "RANGE",
      description = "Time between store restarts.")
  String restartEvery = "15s-30s";

  @Option(names = "--proxy",
      description = "Put a TCP proxy (in this process, 127.0.0.1) between the workers and the "
          + "store, which delays bytes at random and cuts a connection every --cut-every. "
          + "postgres://, mariadb://, redis:// on this machine, private:redis, private:postgres.")
  boolean proxy;

  @Option(names = "--cut-every", defaultValue = "1s-3s", paramLabel = "RANGE",
      description = "Time between connections cut by the proxy.")
  String cutEvery = "1s-3s";

  @Option(names = "--failover", paramLabel = "KIND",
      description = {
          "Fail the store over: start a replicated store of this process's own, "
              + "redis-sentinel (a primary, a replica and three Sentinels; the workers connect "
              + "through the Sentinels) or postgres-standby (a primary and a streaming standby; "
              + "the workers use a multi-host JDBC URL), kill -9 its primary every "
              + "--failover-every, wait for the replica's promotion, and bring the old primary "
              + "back as the new one's replica.",
          "The audit adds the failovers, their promotion times, the store errors while failing "
              + "over, and completions lost (an event run again after its outcome was "
              + "acknowledged), a violation."})
  String failover;

  @Option(names = "--replication", defaultValue = "sync", paramLabel = "sync|async",
      description = "With --failover: sync (Redis: Durability.replicas(1, 1s); PostgreSQL: a "
          + "synchronous standby) or async (Redis: Durability.plain(); PostgreSQL: an "
          + "asynchronous standby).")
  String replication = "sync";

  @Option(names = "--failover-every", defaultValue = "20s-30s", paramLabel = "RANGE",
      description = "With --failover: time from one failover's end to the next one's kill.")
  String failoverEvery = "20s-30s";

  @Option(names = "--lag", paramLabel = "TIME",
      description = "With --failover: pause the replica (SIGSTOP) this long before each kill "
          + "of the primary, and resume it after: replication lag, injected. Default: none.")
  String lag;

  @Option(names = "--sabotage",
      description = "A deliberately broken consumer: the downstream key changes with every "
          + "attempt, so the downstream can no longer deduplicate a takeover (with --broker: "
          + "the effects a killed worker made in a batch whose outcomes it never stored). The "
          + "audit must catch it (exit code 1).")
  boolean sabotage;

  @Option(names = "--drain-timeout", defaultValue = "2m", paramLabel = "TIME",
      description = "How long the queue may take to drain after the faults.")
  String drainTimeout = "2m";

  @Option(names = "--dir", paramLabel = "DIR",
      description = "The run directory (queue, downstream, logs; a new or empty directory). "
          + "Default: a temporary directory, deleted after a run that held.")
  Path directory;

  @Option(names = "--keep", description = "Keep the run directory, the debit tables and, with "
      + "--broker, the queue, stream or topic of the run and its dead letters.")
  boolean keep;

  @Option(names = "--json", description = "Print the audit as one JSON object.")
  boolean json;

  private ChaosAudit.Result lastResult;
  ChaosBrokerAudit.Result lastBrokerResult;

  /**
   * A validated broker run.
   *
   * @param uri the broker's URI, as its client takes it
   */
  record BrokerPlan(ChaosBroker.Kind kind, String uri, String region, double poison, int batch,
      ChaosTime.Range term) {}

  /** A validated run. */
  /**
   * A validated failover run.
   *
   * @param lag how long the replica is paused before each kill of the primary; zero for none
   */
  record FailoverPlan(String kind, ChaosFailover.Replication replication, ChaosTime.Range every,
      Duration lag) {}

  /** A validated run; {@code failover} null without --failover. */
  record Plan(Duration duration, Duration lease, Duration work, Duration freezeFor,
      ChaosTime.Range kill, ChaosTime.Range freeze, ChaosTime.Range restart, ChaosTime.Range cut,
      Duration drain, String privateKind, StoreUri uri, BrokerPlan broker,
      FailoverPlan failover) {

    long visibilityMillis() {
      return lease.toMillis() + 1_000;
    }
  }

  @Override
  public Integer call() throws Exception {
    Plan plan = validate();
    Path runDirectory = runDirectory();
    Resources resources = new Resources(runDirectory, directory == null && !keep, keep);
    Thread hook = new Thread(resources::close, "once-chaos-cleanup");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      return plan.broker() == null ? run(plan, resources)
          : new ChaosBrokerRun(this, plan, resources).run();
    } catch (HarnessFailure e) {
      resources.deleteDirectory = false;
      throw new CommandFailure(CommandFailure.CANNOT_RUN, e.getMessage());
    } catch (CommandFailure e) {
      if (resources.workers != null) {
        resources.deleteDirectory = false; // the message points into it (the workers' log)
      }
      throw e;
    } finally {
      resources.close();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running or has run
      }
    }
  }

  /** The audit of the last run, for tests; null before. */
  ChaosAudit.Result lastResult() {
    return lastResult;
  }

  /** The audit of the last run with --broker, for tests; null before. */
  ChaosBrokerAudit.Result lastBrokerResult() {
    return lastBrokerResult;
  }

  /**
   * A run over the built-in queue, phase by phase: set up the store, the queue, the downstream and
   * the workers; start the workers and await a first delivery; inject the faults; drain the queue
   * without faults; audit; report. Exit code 0 when Once held, 1 on a violation.
   */
  private int run(Plan plan, Resources r) throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    String runId = runId();
    SetUp setUp = setUp(plan, r, runId);
    if (!json) {
      header(out, plan, r, setUp.ledger(), setUp.description());
    }
    Random random = new Random();
    Producer producer = new Producer(r.queue, random, plan);
    awaitFirstDelivery(r, producer);
    ChaosFaultLoop faults = injectFaults(plan, r, out, random, producer);
    Drain drain = drain(plan, r, faults);
    ChaosAudit.Result result = audit(runId, setUp, r, faults, drain);
    lastResult = result;
    if (!result.held() || keep || directory != null) {
      r.deleteDirectory = false;
    }
    report(out, result, r, runId);
    return result.held() ? 0 : 1;
  }

  /**
   * What {@link #setUp} made ready.
   *
   * @param ledger      the debit tables, on a SQL store; null on the others
   * @param description the store's description for the header
   */
  private record SetUp(StoreUri uri, ChaosLedger ledger, String description) {}

  /**
   * The store under test with its schema (and, on a SQL store, the debit tables), the queue, the
   * downstream, and the workers, not started yet; all of it held in {@code r}.
   */
  private SetUp setUp(Plan plan, Resources r, String runId) throws Exception {
    StoreUri uri = storeUnderTest(plan, r);
    ChaosLedger[] ledgers = {null};
    String description = setUpStore(uri, r, opened -> {
      if (opened.store() instanceof JdbcStore) {
        ledgers[0] = new ChaosLedger(runId);
        r.ledger = ledgers[0];
        ledgers[0].create(opened.dataSource());
      }
    });
    ChaosLedger ledger = ledgers[0];
    String workerUri = workerStoreUri(uri, r);
    r.queue = ChaosQueue.open(r.directory);
    r.downstream = ChaosDownstream.open(r.directory);
    r.workers = workers(plan, r, runId, workerUri, ledger != null);
    return new SetUp(uri, ledger, description);
  }

  /** The worker processes of the run, over the store at {@code workerUri}; not started yet. */
  private ChaosWorkers workers(Plan plan, Resources r, String runId, String workerUri,
      boolean ledger) throws IOException {
    List<String> command = workerCommand(plan, r, ChaosWorker.class, runId,
        List.of("--visibility-ms", Long.toString(plan.visibilityMillis())));
    if (ledger) {
      command.add("--ledger");
    }
    if (sabotage) {
      command.add("--sabotage");
    }
    Map<String, String> environment = new java.util.HashMap<>(Map.of(ChaosWorker.STORE_ENV,
        workerUri, ChaosWorker.TABLE_ENV, table));
    if (r.failover != null && r.failover.durability() != null) {
      environment.put(ChaosWorker.DURABILITY_ENV, r.failover.durability());
    }
    return new ChaosWorkers(command, environment, r.directory, workers);
  }

  /** Fills the queue, starts the workers and waits until one of them finished a delivery. */
  private void awaitFirstDelivery(Resources r, Producer producer) throws Exception {
    producer.topUp();
    r.workers.startAll();
    ChaosFaultLoop.awaitFirst(r, workers, "finished a delivery", () -> r.queue.finished() > 0,
        now -> producer.topUp());
  }

  /**
   * Kills, freezes, restarts, fails over and cuts for --duration while the queue is kept topped
   * up, printing a status line every so often; returns the loop, which counted what it did.
   */
  private ChaosFaultLoop injectFaults(Plan plan, Resources r, PrintWriter out, Random random,
      Producer producer) throws Exception {
    ChaosFaultLoop faults = new ChaosFaultLoop(plan, null, r, workers, json, out, random);
    faults.run(now -> producer.topUp(), (seconds, f) -> String.format(Locale.ROOT,
        "  %3ds: %d deliveries finished, %d kills, %d freezes, %d store restarts, "
            + "%d failovers, %d waiting in the queue", seconds, r.queue.finished(), f.kills(),
        f.freezes(), f.restarts(), f.failovers().size(), r.queue.pending()));
    if (plan.failover() != null && faults.failovers().isEmpty()) {
      // A run that failed nothing over proves nothing about failovers: not a pass.
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "no failover completed within "
          + ChaosTime.format(plan.duration()) + "; make --duration longer than --failover-every");
    }
    return faults;
  }

  /**
   * How the drain ended.
   *
   * @param pending messages still in the queue at its end (zero: drained)
   * @param end     when it ended (epoch millis)
   */
  private record Drain(long pending, long end) {}

  /**
   * Without faults, lets the workers empty the queue (within --drain-timeout of the faults' end,
   * replacing any that exited), then stops them.
   */
  private Drain drain(Plan plan, Resources r, ChaosFaultLoop faults) throws Exception {
    faults.calm();
    long drainDeadline = faults.end() + plan.drain().toMillis();
    long pending = r.queue.pending();
    while (pending > 0 && System.currentTimeMillis() < drainDeadline) {
      r.workers.replaceExited();
      Thread.sleep(100);
      pending = r.queue.pending();
    }
    long drainEnd = System.currentTimeMillis();
    r.workers.stop();
    return new Drain(pending, drainEnd);
  }

  /**
   * Audits what every event did: the queue, the downstream, the store (opened again, it may be
   * coming back from a restart) and the debits, with the faults counted.
   */
  private ChaosAudit.Result audit(String runId, SetUp setUp, Resources r, ChaosFaultLoop faults,
      Drain drain) throws InterruptedException {
    long start = faults.start();
    long faultEnd = faults.end();
    ChaosAudit.Faults counted = new ChaosAudit.Faults(faults.kills(), faults.freezes(),
        faults.restarts(), r.proxy == null ? 0 : r.proxy.cuts(),
        r.proxy == null ? 0 : r.proxy.delays(), r.workers.started(),
        r.workers.exitedByThemselves(), (faultEnd - start) / 1000.0,
        (drain.end() - faultEnd) / 1000.0, drain.pending() == 0, start, faultEnd,
        faults.failovers());
    ChaosLedger ledger = setUp.ledger();
    try {
      r.opened = reopen(setUp.uri());
      return ChaosAudit.audit(runId, r.queue, r.downstream, r.opened.store(), ledger,
          ledger == null ? null : r.opened.dataSource(), counted);
    } catch (StoreUnavailableException | SQLException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot audit the run: "
          + StoreUris.causeMessage(e));
    }
  }

  private void header(PrintWriter out, Plan plan, Resources r, ChaosLedger ledger,
      String description) {
    out.printf(Locale.ROOT, "once chaos: %d worker processes for %s, lease %s with heartbeat, "
            + "%s of events enqueued twice%s%n", workers, ChaosTime.format(plan.duration()),
        ChaosTime.format(plan.lease()), percent(duplicates),
        sabotage ? ", SABOTAGED (downstream key changes per attempt)" : "");
    out.printf(Locale.ROOT, "store: %s%s%n", description, ledger == null ? ""
        : "; debits in " + ledger.accountsTable() + ", " + ledger.debitsTable());
    out.printf(Locale.ROOT, "queue: SQLite (WAL) in %s, visibility timeout %s%n", r.directory,
        ChaosTime.format(Duration.ofMillis(plan.visibilityMillis())));
    out.printf(Locale.ROOT, "faults: %s%n", ChaosFaultLoop.describe(plan, null, r.proxy,
        "a connection"));
    out.flush();
  }

  private void report(PrintWriter out, ChaosAudit.Result result, Resources r, String runId) {
    PrintWriter err = spec.commandLine().getErr();
    for (String v : result.violations()) {
      err.println("once chaos: VIOLATION: " + v);
    }
    err.flush();
    if (json) {
      out.println(ChaosAudit.json(result.figures())
          .put("run", runId)
          .put("store", r.uri.display())
          .put("workers", workers)
          .put("sabotage", sabotage)
          .put("held", result.held())
          .put("violations", result.violations())
          .put("run_directory", r.deleteDirectory ? null : r.directory.toString()));
      out.flush();
      return;
    }
    out.println();
    ChaosAudit.print(out, result.figures(), sabotage);
    out.println();
    if (result.held()) {
      out.printf(Locale.ROOT, "Once held: every one of %d events made its deduplicated effect%s "
              + "exactly once, none was lost, and every delivery saw the event's one outcome.%n",
          result.figures().events(), result.figures().debits() == null ? ""
              : " and its debit");
    } else {
      out.printf(Locale.ROOT, "Once did NOT hold: %d violation%s (on stderr).%n",
          result.violations().size(), result.violations().size() == 1 ? "" : "s");
    }
    if (!r.deleteDirectory) {
      out.printf(Locale.ROOT, "Run directory kept: %s%n", r.directory);
    }
    out.flush();
  }

  /** The store a run tests: a private one started now, the --store given, or SQLite. */
  StoreUri storeUnderTest(Plan plan, Resources r) throws Exception {
    StoreUri uri = plan.uri();
    if (plan.privateKind() != null) {
      r.privateStore = ChaosPrivateStore.start(plan.privateKind(), r.directory);
      uri = StoreUris.parse(r.privateStore.uri());
    } else if (plan.failover() != null) {
      r.failover = ChaosFailover.start(plan.failover().kind(), plan.failover().replication(),
          r.directory);
      uri = StoreUris.parse(r.failover.uri());
    } else if (uri == null) {
      uri = StoreUris.parse("sqlite:" + r.directory.resolve("store.db"));
    }
    r.uri = uri;
    r.table = table;
    return uri;
  }

  /** What a run sets up in the store besides its schema (the store mode's debit tables). */
  @FunctionalInterface
  interface StoreSetUp {
    void accept(OpenStore opened) throws SQLException;
  }

  /** Creates the schema (and {@code more}); returns the store's description for the header. */
  String setUpStore(StoreUri uri, Resources r, StoreSetUp more) {
    // Opened to check it and set it up, then closed: the coordinator holds no connection while
    // the store restarts (and its client has nothing to reconnect and log about).
    try (OpenStore opened = StoreUris.open(uri, 2, table)) {
      opened.createSchema();
      more.accept(opened);
      return r.privateStore != null ? r.privateStore.describe()
          : r.failover != null ? r.failover.describe() : opened.describe();
    } catch (StoreUnavailableException | SQLException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN,
          StoreUris.cannotOpenMessage(uri, StoreUris.causeMessage(e)));
    }
  }

  /** The store URI the workers get: through the fault proxy (started here) with --proxy. */
  String workerStoreUri(StoreUri uri, Resources r) throws Exception {
    String workerUri = uri.kind() == Kind.SQLITE ? "sqlite:" + uri.file() : storeText(r);
    if (proxy) {
      ChaosProxy.Route route;
      try {
        route = ChaosProxy.route(workerUri, uri.display());
      } catch (IllegalArgumentException e) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, e.getMessage());
      }
      r.proxy = ChaosProxy.start(route.host(), route.port());
      workerUri = route.through(r.proxy.port());
    }
    return workerUri;
  }

  /**
   * The command line of a worker JVM ({@code main}): small heap, quick start, the options every
   * worker takes, and {@code specific} to its mode.
   */
  static List<String> workerCommand(Plan plan, Resources r, Class<?> main, String runId,
      List<String> specific) throws IOException {
    long retention = plan.duration().plus(plan.drain()).plus(Duration.ofHours(1)).toMillis();
    long deadline = System.currentTimeMillis() + START_MILLIS + plan.duration().toMillis()
        + plan.drain().toMillis() + 60_000;
    List<String> command = new ArrayList<>(List.of(javaBinary(),
        "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-Xss512k",
        "-cp", workerClassPath(r.directory), main.getName(),
        "--run-dir", r.directory.toString(), "--run", runId));
    command.addAll(specific);
    command.addAll(List.of(
        "--lease-ms", Long.toString(plan.lease().toMillis()),
        "--work-ms", Long.toString(plan.work().toMillis()),
        "--retention-ms", Long.toString(retention),
        "--coordinator", Long.toString(ProcessHandle.current().pid()),
        "--deadline", Long.toString(deadline)));
    return command;
  }

  /** Opens the store again for the audit; it may be coming back from a restart. */
  OpenStore reopen(StoreUri uri) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 30_000;
    while (true) {
      try {
        return StoreUris.open(uri, 2, table);
      } catch (CommandFailure e) {
        if (System.currentTimeMillis() > deadline) {
          throw new CommandFailure(CommandFailure.CANNOT_RUN, "cannot audit the run: "
              + e.getMessage());
        }
        Thread.sleep(250);
      }
    }
  }

  /**
   * Restarts the private store in a thread of its own, so that a PostgreSQL recovering for a
   * second or two does not hold up the kills and freezes of the workers.
   */
  static final class Restarter {
    private final ChaosPrivateStore store;
    private Thread running;
    private volatile long restarts;
    private volatile Exception failure;

    Restarter(ChaosPrivateStore store) {
      this.store = store;
    }

    boolean idle() {
      return running == null || !running.isAlive();
    }

    void restart(long downMillis) throws Exception {
      check();
      running = new Thread(() -> {
        try {
          store.restart(downMillis);
          restarts++;
        } catch (Exception e) {
          failure = e;
        }
      }, "once-chaos-restart");
      running.setDaemon(true);
      running.start();
    }

    long restarts() {
      return restarts;
    }

    /** Waits for a restart under way; the store is up afterwards. */
    void finish() throws Exception {
      if (running != null) {
        running.join(120_000);
      }
      check();
    }

    private void check() throws Exception {
      if (failure != null) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "the private store did not come "
            + "back after a restart: " + failure.getMessage());
      }
    }
  }

  /** Keeps the queue topped up so that no worker idles, within {@link #MAX_EVENTS}. */
  private final class Producer {
    private final ChaosQueue queue;
    private final Random random;
    private final Plan plan;
    private int produced;

    Producer(ChaosQueue queue, Random random, Plan plan) {
      this.queue = queue;
      this.random = random;
      this.plan = plan;
    }

    void topUp() {
      long missing = (long) BACKLOG_PER_WORKER * workers - queue.pending();
      if (missing <= 0 || produced >= MAX_EVENTS) {
        return;
      }
      List<ChaosQueue.Produced> batch = new ArrayList<>();
      for (int i = 0; i < missing && produced < MAX_EVENTS; i++) {
        produced++;
        // A duplicate comes while the first may still run (in progress) or after it (replay).
        long delay = random.nextDouble() < duplicates
            ? random.nextInt((int) plan.lease().toMillis() * 2 + 1) : -1;
        batch.add(new ChaosQueue.Produced(String.format(Locale.ROOT, "event-%07d", produced),
            1 + random.nextInt(999), delay));
      }
      queue.produce(batch, System.currentTimeMillis());
    }
  }

  /** Everything the run holds open; {@link #close()} releases all of it, once. */
  static final class Resources {
    final Path directory;
    volatile boolean deleteDirectory;
    volatile ChaosPrivateStore privateStore;
    volatile ChaosFailover failover;
    volatile OpenStore opened;
    volatile StoreUri uri;
    volatile String table;
    volatile ChaosLedger ledger;
    volatile ChaosProxy proxy;
    volatile ChaosQueue queue;
    volatile ChaosDownstream downstream;
    volatile ChaosWorkers workers;
    volatile ChaosBroker broker;
    /** Whether {@link #close()} deletes the broker destinations the run declared. */
    volatile boolean deleteTopology;
    private final boolean keepLedger;
    private final AtomicBoolean closed = new AtomicBoolean();

    Resources(Path directory, boolean deleteDirectory, boolean keepLedger) {
      this.directory = directory;
      this.deleteDirectory = deleteDirectory;
      this.keepLedger = keepLedger;
    }

    void close() {
      if (!closed.compareAndSet(false, true)) {
        return;
      }
      // Decided now: when the shutdown hook closes (SIGTERM, Ctrl-C), the main thread fails on
      // what is being closed under it and would otherwise mark the directory kept meanwhile.
      boolean delete = deleteDirectory;
      if (workers != null) {
        workers.close();
      }
      if (proxy != null) {
        proxy.close();
      }
      if (broker != null) {
        if (deleteTopology) {
          try {
            broker.delete();
          } catch (Exception ignored) {
            // the broker is gone: nothing to delete, or nothing that can be
          }
        }
        try {
          broker.close();
        } catch (RuntimeException ignored) {
          // closing
        }
      }
      if (ledger != null && !keepLedger && uri != null && privateStore == null
          && failover == null) {
        try {
          if (opened == null) {
            opened = StoreUris.open(uri, 1, table);
          }
          ledger.drop(opened.dataSource());
        } catch (RuntimeException ignored) {
          // the store is gone (a private one killed first, or unreachable): nothing to drop
        }
      }
      if (opened != null) {
        try {
          opened.close();
        } catch (RuntimeException ignored) {
          // closing
        }
      }
      if (privateStore != null) {
        privateStore.close();
      }
      if (failover != null) {
        failover.close();
      }
      if (queue != null) {
        queue.close();
      }
      if (downstream != null) {
        downstream.close();
      }
      if (delete) {
        ChaosPrivateStore.deleteRecursively(directory);
      }
    }
  }

  /** The URI the workers open: the one given (password included: it goes to their environment). */
  String storeText(Resources r) {
    return r.privateStore != null ? r.privateStore.uri()
        : r.failover != null ? r.failover.uri() : store;
  }

  private Plan validate() {
    if (System.getProperty("os.name", "").startsWith("Windows")) {
      throw invalid("once chaos needs POSIX signals (kill -9, SIGSTOP); it does not run on "
          + "Windows");
    }
    if (workers < 1 || workers > MAX_WORKERS) {
      throw invalid("--workers must be between 1 and " + MAX_WORKERS + ", was " + workers);
    }
    if (!(duplicates >= 0.0 && duplicates <= 1.0)) {
      throw invalid("--duplicates must be between 0.0 and 1.0, was " + duplicates);
    }
    try {
      Duration total = ChaosTime.duration("--duration", duration);
      if (total.isZero() || total.compareTo(MAX_DURATION) > 0) {
        throw invalid("--duration must be above 0 and at most 1h, was " + duration);
      }
      Duration leaseTime = ChaosTime.duration("--lease", lease);
      if (leaseTime.toMillis() < 100 || leaseTime.compareTo(Duration.ofMinutes(1)) > 0) {
        throw invalid("--lease must be between 100ms and 1m, was " + lease);
      }
      Duration workTime = ChaosTime.duration("--work", work);
      if (workTime.compareTo(Duration.ofSeconds(10)) > 0) {
        throw invalid("--work must be at most 10s, was " + work);
      }
      Duration freezeTime = freezeFor == null ? leaseTime.multipliedBy(2).plusSeconds(1)
          : ChaosTime.duration("--freeze-for", freezeFor);
      if (freezeTime.isZero() || freezeTime.compareTo(Duration.ofMinutes(10)) > 0) {
        throw invalid("--freeze-for must be above 0 and at most 10m, was " + freezeFor);
      }
      ChaosTime.Range kill = positive("--kill-every", ChaosTime.range("--kill-every", killEvery));
      ChaosTime.Range freeze = positive("--freeze-every",
          ChaosTime.range("--freeze-every", freezeEvery));
      ChaosTime.Range restart = null;
      ChaosTime.Range cut = null;
      Duration drain = ChaosTime.duration("--drain-timeout", drainTimeout);
      if (drain.compareTo(Duration.ofSeconds(5)) < 0 || drain.compareTo(MAX_DURATION) > 0) {
        throw invalid("--drain-timeout must be between 5s and 1h, was " + drainTimeout);
      }
      String privateKind = null;
      StoreUri uri = null;
      if (ChaosPrivateStore.named(store)) {
        privateKind = ChaosPrivateStore.kind(store);
      } else if (store != null) {
        uri = StoreUris.parse(store);
        if (uri.kind() == Kind.MEMORY) {
          throw invalid("--store memory: lives in one process; the workers are separate "
              + "processes: use a SQLite file or a server");
        }
        if (proxy) {
          if (uri.kind() == Kind.SQLITE || uri.kind() == Kind.DYNAMODB
              || uri.kind() == Kind.REDIS_CLUSTER || store.toLowerCase(Locale.ROOT)
              .startsWith("jdbc:")) {
            throw invalid("--proxy works with postgres://, mariadb:// and redis:// stores on "
                + "this machine, private:redis and private:postgres; not " + uri.display());
          }
          ChaosProxy.route(store, uri.display()); // a loopback host, or a usage error now
        }
      } else if (proxy) {
        throw invalid("--proxy needs a store reached over TCP (postgres://, mariadb://, "
            + "redis://, private:redis, private:postgres), not the default SQLite file");
      }
      if (restartStore) {
        if (privateKind == null) {
          throw invalid("--restart-store restarts only a store this command starts itself: "
              + "--store private:redis or --store private:postgres");
        }
        restart = positive("--restart-every", ChaosTime.range("--restart-every", restartEvery));
      }
      if (proxy) {
        cut = positive("--cut-every", ChaosTime.range("--cut-every", cutEvery));
      }
      if (directory != null && Files.exists(directory) && !(Files.isDirectory(directory)
          && isEmpty(directory))) {
        throw invalid("--dir " + directory + " must be a new or empty directory");
      }
      FailoverPlan failoverPlan = failoverPlan();
      if (failoverPlan != null && total.compareTo(failoverPlan.every().max()) <= 0) {
        throw invalid("--duration (" + duration + ") must be longer than --failover-every ("
            + failoverEvery + "), so that the store fails over at least once");
      }
      if (failoverPlan != null && (store != null || restartStore || proxy || broker != null)) {
        throw invalid("--failover starts its own store: it takes no --store, --restart-store, "
            + "--proxy or --broker");
      }
      return new Plan(total, leaseTime, workTime, freezeTime, kill, freeze, restart, cut, drain,
          privateKind, uri, brokerPlan(), failoverPlan);
    } catch (IllegalArgumentException e) {
      throw invalid(e.getMessage());
    }
  }

  /** The failover options, checked; null without --failover (and then none may be given). */
  private FailoverPlan failoverPlan() {
    if (failover == null) {
      if (lag != null || !"sync".equals(replication) || !"20s-30s".equals(failoverEvery)) {
        throw invalid((lag != null ? "--lag" : !"sync".equals(replication) ? "--replication"
            : "--failover-every") + " needs --failover redis-sentinel|postgres-standby");
      }
      return null;
    }
    String kind = ChaosFailover.kind(failover);
    ChaosFailover.Replication mode = ChaosFailover.Replication.parse(replication);
    ChaosTime.Range every = ChaosTime.range("--failover-every", failoverEvery);
    if (every == null || every.min().toMillis() < 1_000) {
      throw invalid("--failover-every must be at least 1s, was " + failoverEvery);
    }
    Duration pause = lag == null ? Duration.ZERO : ChaosTime.duration("--lag", lag);
    if (pause.compareTo(Duration.ofSeconds(30)) > 0) {
      throw invalid("--lag must be at most 30s, was " + lag);
    }
    return new FailoverPlan(kind, mode, every, pause);
  }

  /** The broker options, checked; null without --broker (and then none of them may be given). */
  private BrokerPlan brokerPlan() {
    if (broker == null) {
      String given = brokerUri != null ? "--broker-uri" : region != null ? "--region"
          : batch != null ? "--batch" : poison != null ? "--poison"
          : termEvery != null ? "--term-every" : null;
      if (given != null) {
        throw invalid(given + " needs --broker rabbitmq|nats|kafka|sqs");
      }
      return null;
    }
    ChaosBroker.Kind kind = ChaosBroker.Kind.parse(broker);
    String uri = brokerUri == null ? kind.defaultUri : brokerUri.trim();
    if (uri.isEmpty()) {
      throw invalid("--broker-uri must not be empty");
    }
    if (region != null && kind != ChaosBroker.Kind.SQS) {
      throw invalid("--region is for --broker sqs");
    }
    String sqsRegion = region != null ? region.trim()
        : System.getenv().getOrDefault("AWS_REGION", "us-east-1");
    double share = poison == null ? 0.01 : poison;
    if (!(share >= 0.0 && share <= 0.5)) {
      throw invalid("--poison must be between 0.0 and 0.5, was " + poison);
    }
    int size = batch == null ? 20 : batch;
    if (size < 1 || size > 1000) {
      throw invalid("--batch must be between 1 and 1000, was " + batch);
    }
    ChaosTime.Range term = positive("--term-every",
        ChaosTime.range("--term-every", termEvery == null ? "3s-6s" : termEvery));
    return new BrokerPlan(kind, uri, sqsRegion, share, size, term);
  }

  ChaosTime.Range positive(String option, ChaosTime.Range range) {
    if (range != null && range.min().toMillis() < 10) {
      throw invalid(option + " must be at least 10ms (or off), was " + range);
    }
    return range;
  }

  private static boolean isEmpty(Path directory) {
    try (var entries = Files.list(directory)) {
      return entries.findAny().isEmpty();
    } catch (IOException e) {
      return false;
    }
  }

  private Path runDirectory() throws IOException {
    if (directory == null) {
      return Files.createTempDirectory("once-chaos-");
    }
    Path dir = directory.toAbsolutePath().normalize();
    Files.createDirectories(dir);
    return dir;
  }

  /**
   * The class path of the workers: this process's. When it is one jar (java -jar once.jar), a
   * copy in the run directory: {@code ./once} rebuilds the jar when the sources change, and a
   * worker started from a jar rewritten mid-run would not find its classes.
   */
  static String workerClassPath(Path runDirectory) throws IOException {
    String classPath = System.getProperty("java.class.path");
    if (classPath.endsWith(".jar") && !classPath.contains(java.io.File.pathSeparator)
        && Files.isRegularFile(Path.of(classPath))) {
      Path copy = runDirectory.resolve("once.jar");
      Files.copy(Path.of(classPath), copy);
      return copy.toString();
    }
    return classPath;
  }

  static String javaBinary() {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    return Files.isExecutable(java) ? java.toString() : "java";
  }

  ParameterException invalid(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /** Eight random characters from [a-z0-9]. */
  static String runId() {
    return Long.toString(ThreadLocalRandom.current().nextLong(36L * 36 * 36 * 36 * 36 * 36 * 36,
        36L * 36 * 36 * 36 * 36 * 36 * 36 * 36), 36);
  }

  static String percent(double share) {
    return BigDecimal.valueOf(share).movePointRight(2).stripTrailingZeros().toPlainString() + "%";
  }
}
