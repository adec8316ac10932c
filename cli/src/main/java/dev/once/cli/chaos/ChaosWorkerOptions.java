package dev.once.cli.chaos;

import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.redis.Durability;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Option;

/**
 * What every chaos worker process shares, of either mode ({@link ChaosWorker},
 * {@link ChaosBrokerWorker}): the options the coordinator passes to both (a picocli mixin), when
 * to stop (the stop file, the coordinator gone, the deadline), opening the store while it
 * restarts, the heartbeat thread and the quiet logging.
 */
final class ChaosWorkerOptions {

  private static final long CHECK_MILLIS = 250;

  /** Held here: JUL keeps its loggers weakly, and a collected one forgets its level. */
  private static final List<Logger> QUIET = new ArrayList<>();

  @Option(names = "--run-dir", required = true)
  Path runDirectory;

  @Option(names = "--run", required = true)
  String runId;

  @Option(names = "--worker", required = true)
  int worker;

  @Option(names = "--lease-ms", required = true)
  long leaseMillis;

  @Option(names = "--work-ms", required = true)
  long workMillis;

  @Option(names = "--retention-ms", required = true)
  long retentionMillis;

  @Option(names = "--sabotage")
  boolean sabotage;

  @Option(names = "--coordinator", required = true)
  long coordinatorPid;

  @Option(names = "--deadline", required = true)
  long deadlineMillis;

  private long nextCheck;
  private volatile boolean stopped;

  /**
   * A worker prints errors only: under chaos, reconnections and lost leases are expected (and the
   * audit counts them), so these loggers log SEVERE only.
   */
  static synchronized void quiet(String... loggers) {
    for (String name : loggers) {
      Logger logger = Logger.getLogger(name);
      logger.setLevel(Level.SEVERE);
      QUIET.add(logger);
    }
  }

  /** The heartbeat's thread: a daemon, so that it never holds the JVM up. */
  static ScheduledExecutorService heartbeats() {
    return Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "once-chaos-heartbeat");
      t.setDaemon(true);
      return t;
    });
  }

  /** False once the stop file is there, the coordinator gone, or the deadline passed. */
  boolean running() {
    long now = System.currentTimeMillis();
    if (now >= deadlineMillis) {
      return false;
    }
    if (now >= nextCheck) {
      nextCheck = now + CHECK_MILLIS;
      stopped = Files.exists(runDirectory.resolve(ChaosWorker.STOP_FILE))
          || !ProcessHandle.of(coordinatorPid).map(ProcessHandle::isAlive).orElse(false);
    }
    return !stopped;
  }

  /** The store, opened again and again while it is down (being restarted), until stopped. */
  OpenStore open(StoreUri uri, String table) {
    return open(uri, table, null);
  }

  /** As {@link #open(StoreUri, String)}; a Redis store writing with {@code durability}. */
  OpenStore open(StoreUri uri, String table, Durability durability) {
    while (running()) {
      try {
        return StoreUris.open(uri, ChaosWorker.CONNECTIONS, table, null, durability);
      } catch (CommandFailure e) {
        pause(200);
      }
    }
    return null;
  }

  static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
