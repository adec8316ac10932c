package dev.once.cli.chaos;

import dev.once.Codecs;
import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.LeaseLostException;
import dev.once.Once;
import dev.once.RequestInProgressException;
import dev.once.Result;
import dev.once.Scheduler;
import dev.once.StoreUnavailableException;
import dev.once.cli.chaos.ChaosQueue.Answer;
import dev.once.cli.chaos.ChaosQueue.Delivery;
import dev.once.cli.chaos.ChaosQueue.HarnessFailure;
import dev.once.cli.chaos.ChaosQueue.Message;
import dev.once.cli.store.StoreUris.OpenStore;
import dev.once.cli.store.StoreUris.StoreUri;
import dev.once.cli.store.StoreUris;
import dev.once.cli.support.CommandFailure;
import dev.once.jdbc.JdbcStore;
import dev.once.jdbc.TransactionalOnce;
import dev.once.redis.Durability;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * One worker process of {@code once chaos}, started (and killed, and frozen) by the coordinator,
 * {@link ChaosCommand}: {@code java -cp <jar> dev.once.cli.chaos.ChaosWorker --run-dir DIR ...}, with
 * the store URI in the environment ({@value #STORE_ENV}) rather than on a command line that
 * {@code ps} shows.
 *
 * <p>It loops: receives a message from the run's queue ({@link ChaosQueue}), runs
 * {@link Once#call} keyed by the event over the store under test, lease short and heartbeat on,
 * whose work makes three effects: an append to a log without deduplication, an effect
 * deduplicated downstream on {@code Attempt.key()}, and on a SQL store a debit through
 * {@link TransactionalOnce} in the store's database; then it records what Once answered and
 * acknowledges the message in one transaction of the queue. A message it could not finish is made
 * visible again (or left to its visibility timeout, if the worker dies).
 *
 * <p>It prints nothing but errors. It stops when the run directory holds a {@value #STOP_FILE}
 * file, when the coordinator's process is gone, or at its deadline, whichever comes first.
 */
@Command(name = "chaos-worker", hidden = true,
    description = "A worker process of once chaos; started by it, not by hand.")
final class ChaosWorker implements Callable<Integer> {

  @Mixin
  ChaosWorkerOptions common = new ChaosWorkerOptions();

  /** The environment variable holding the store URI (passwords stay out of {@code ps}). */
  static final String STORE_ENV = "ONCE_CHAOS_STORE";
  /** The environment variable holding the table of a SQL or DynamoDB store. */
  static final String TABLE_ENV = "ONCE_CHAOS_TABLE";
  /**
   * The environment variable holding the durability of a Redis store's writes, {@code plain} or
   * {@code replicas:N:MILLIS}; absent: the store's default.
   */
  static final String DURABILITY_ENV = "ONCE_CHAOS_REDIS_DURABILITY";
  /** Created in the run directory to stop every worker. */
  static final String STOP_FILE = "stop";

  /** Connections per worker: the work, the heartbeat, the transactional debit. */
  static final int CONNECTIONS = 4;
  private static final long IDLE_MILLIS = 20;

  @Option(names = "--visibility-ms", required = true)
  long visibilityMillis;

  @Option(names = "--ledger")
  boolean ledger;


  /** Runs one worker and exits with its code. */
  public static void main(String[] args) {
    // Lettuce and Netty log reconnections, Once a heartbeat that lost its lease or the store.
    ChaosWorkerOptions.quiet("io.lettuce", "io.netty", "dev.once");
    System.exit(new CommandLine(new ChaosWorker()).execute(args));
  }

  /** The key of an event's execution in lease mode. */
  static IdempotencyKey key(String runId, String event) {
    return IdempotencyKey.of(scope(runId), event);
  }

  /** The key of an event's transactional debit. */
  static IdempotencyKey debitKey(String runId, String event) {
    return IdempotencyKey.of(scope(runId) + ".debit", event);
  }

  static String scope(String runId) {
    return "once.chaos." + runId;
  }

  /** What an event's payload fingerprints: every delivery of it carries the same. */
  static Fingerprint fingerprint(String event, int amount) {
    return Fingerprint.ofParts(event, Integer.toString(amount));
  }

  @Override
  public Integer call() {
    String text = System.getenv(STORE_ENV);
    if (text == null || text.isBlank()) {
      System.err.println("once chaos-worker: no store in " + STORE_ENV);
      return CommandFailure.CANNOT_RUN;
    }
    String table = System.getenv().getOrDefault(TABLE_ENV, JdbcStore.DEFAULT_TABLE);
    StoreUri uri = StoreUris.parse(text);
    ScheduledExecutorService beats = ChaosWorkerOptions.heartbeats();
    try (ChaosQueue queue = ChaosQueue.open(common.runDirectory);
         ChaosDownstream downstream = ChaosDownstream.open(common.runDirectory)) {
      OpenStore opened = common.open(uri, table, durability(System.getenv(DURABILITY_ENV)));
      if (opened == null) {
        return 0; // stopped before the store could be reached
      }
      try (opened) {
        Once once = Once.builder(opened.store())
            .lease(Duration.ofMillis(common.leaseMillis))
            .retention(Duration.ofMillis(common.retentionMillis))
            .heartbeat(Scheduler.of(beats))
            .build();
        TransactionalOnce transactional = ledger
            ? TransactionalOnce.builder((JdbcStore) opened.store())
                .retention(Duration.ofMillis(common.retentionMillis))
                .lockWait(Duration.ofMillis(common.leaseMillis))
                .build()
            : null;
        Work work = new Work(once, transactional, downstream, new ChaosLedger(common.runId));
        while (common.running()) {
          Message message;
          try {
            message = queue.receive(System.currentTimeMillis(), visibilityMillis);
          } catch (HarnessFailure e) {
            error(e);
            ChaosWorkerOptions.pause(100);
            continue;
          }
          if (message == null) {
            ChaosWorkerOptions.pause(IDLE_MILLIS);
            continue;
          }
          Delivery delivery = work.deliver(message);
          long visibleAt = switch (delivery.answer()) {
            case RAN, REPLAYED -> -1; // acknowledge
            case IN_PROGRESS -> System.currentTimeMillis() + common.leaseMillis / 2
                + ThreadLocalRandom.current().nextLong(1 + common.leaseMillis / 2);
            case LEASE_LOST -> System.currentTimeMillis();
            default -> System.currentTimeMillis() + 100 + ThreadLocalRandom.current().nextLong(200);
          };
          try {
            queue.finish(delivery, visibleAt);
          } catch (HarnessFailure e) {
            error(e); // the message comes back after its visibility timeout
          }
        }
      }
      return 0;
    } finally {
      beats.shutdownNow();
    }
  }

  /** One delivery through Once, and what it answered. */
  private final class Work {
    private final Once once;
    private final TransactionalOnce transactional;
    private final ChaosDownstream downstream;
    private final ChaosLedger ledgerTables;

    Work(Once once, TransactionalOnce transactional, ChaosDownstream downstream,
        ChaosLedger ledgerTables) {
      this.once = once;
      this.transactional = transactional;
      this.downstream = downstream;
      this.ledgerTables = ledgerTables;
    }

    Delivery deliver(Message m) {
      long started = System.currentTimeMillis();
      long[] token = {0};
      boolean[] takeover = {false};
      boolean[] repeated = {false};
      Answer answer;
      String outcome = null;
      String error = null;
      try {
        Result<String> result = once.call(key(common.runId, m.event()),
            fingerprint(m.event(), m.amount()), Codecs.utf8(), attempt -> {
              token[0] = attempt.token();
              takeover[0] = attempt.takeover();
              // What a careful consumer does before an effect the downstream cannot deduplicate:
              // a frozen worker that wakes past its lease stops here instead of appending.
              attempt.ensureLease();
              downstream.append(m.event(), common.worker, attempt.token());
              // --sabotage: a key that changes with every attempt deduplicates nothing.
              String downstreamKey = common.sabotage ? attempt.key() + "." + attempt.token()
                  : attempt.key();
              repeated[0] = !downstream.deduplicated(downstreamKey, m.event(), common.worker,
                  attempt.token());
              String debit = transactional == null ? "none" : debit(m);
              // The rest of the work (a slow reply): the window in which a kill leaves effects
              // made and no outcome stored.
              ChaosWorkerOptions.pause(
                  ThreadLocalRandom.current().nextLong(2 * common.workMillis + 1));
              return "token " + attempt.token() + ", debit " + debit;
            });
        answer = result.replayed() ? Answer.REPLAYED : Answer.RAN;
        outcome = result.value();
        token[0] = result.token();
      } catch (RequestInProgressException e) {
        answer = Answer.IN_PROGRESS;
      } catch (LeaseLostException e) {
        answer = Answer.LEASE_LOST;
      } catch (StoreUnavailableException | SQLException e) {
        answer = Answer.STORE_ERROR;
        error = StoreUris.causeMessage(e);
      } catch (HarnessFailure e) {
        answer = Answer.HARNESS_ERROR;
        error = e.getMessage();
        error(e);
      } catch (RuntimeException e) {
        answer = Answer.ERROR;
        error = e.toString();
        System.err.println("once chaos-worker " + common.worker + ": event " + m.event() + ":");
        e.printStackTrace();
      }
      return new Delivery(m, common.worker, answer, outcome, token[0], takeover[0], repeated[0],
          started, System.currentTimeMillis(), error);
    }

    private String debit(Message m) throws SQLException {
      Result<String> debit = transactional.call(debitKey(common.runId, m.event()),
          fingerprint(m.event(), m.amount()), Codecs.utf8(), tx -> {
            ledgerTables.debit(tx.connection(), m.event(), m.amount(), common.worker, tx.token());
            return "token " + tx.token();
          });
      return debit.value();
    }
  }

  /** {@code plain}, {@code replicas:N:MILLIS}, or null (the store's default). */
  static Durability durability(String text) {
    if (text == null || text.isBlank()) {
      return null;
    }
    if (text.equals("plain")) {
      return Durability.plain();
    }
    String[] parts = text.split(":");
    if (parts.length != 3 || !parts[0].equals("replicas")) {
      throw new IllegalArgumentException(DURABILITY_ENV + " must be plain or replicas:N:MILLIS, "
          + "was " + text);
    }
    return Durability.replicas(Integer.parseInt(parts[1]),
        java.time.Duration.ofMillis(Long.parseLong(parts[2])));
  }

  private void error(Exception e) {
    System.err.println("once chaos-worker " + common.worker + ": " + e.getMessage());
  }

}
