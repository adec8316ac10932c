package dev.once.cli.chaos;

import dev.once.cli.support.CommandFailure;
import dev.once.cli.support.Progress;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The faults of a chaos run, store mode and broker mode alike: {@code kill -9}, {@code SIGSTOP}
 * past the lease (then {@code SIGCONT}), {@code SIGTERM} (broker mode only), store restarts and
 * proxy cuts, each at random times in its range, while the mode's producer keeps work coming.
 * One loop for both, so that the two modes inject the same faults the same way.
 */
final class ChaosFaultLoop {

  private static final long TICK_MILLIS = 20;
  private static final long STATUS_MILLIS = 30_000;

  /** What the mode does every tick before the faults (topping up its queue or broker). */
  @FunctionalInterface
  interface Tick {
    void run(long now) throws Exception;
  }

  /** The mode's status line every {@value #STATUS_MILLIS} ms, without its end of line. */
  @FunctionalInterface
  interface Status {
    String line(long seconds, ChaosFaultLoop faults) throws Exception;
  }

  private final ChaosCommand.Plan plan;
  private final ChaosTime.Range term;
  private final ChaosCommand.Resources r;
  private final int workers;
  private final boolean quiet;
  private final PrintWriter out;
  private final Random random;
  private final ChaosCommand.Restarter restarter;
  private final ChaosFailover.Runner failovers;
  private long kills;
  private long freezes;
  private long terms;
  private long start;
  private long end;

  /** {@code term} null: no SIGTERMs. {@code quiet} (--json): no progress, no status lines. */
  ChaosFaultLoop(ChaosCommand.Plan plan, ChaosTime.Range term, ChaosCommand.Resources r,
      int workers, boolean quiet, PrintWriter out, Random random) {
    this.plan = plan;
    this.term = term;
    this.r = r;
    this.workers = workers;
    this.quiet = quiet;
    this.out = out;
    this.random = random;
    this.restarter = new ChaosCommand.Restarter(r.privateStore);
    this.failovers = r.failover == null ? null : new ChaosFailover.Runner(r.failover);
  }

  /** Runs the faults for the plan's duration, then waits for a store restart under way. */
  void run(Tick tick, Status status) throws Exception {
    start = System.currentTimeMillis();
    long until = start + plan.duration().toMillis();
    long nextKill = next(start, plan.kill());
    long nextFreeze = next(start, plan.freeze());
    long nextTerm = next(start, term);
    long nextRestart = next(start, plan.restart());
    long nextCut = next(start, plan.cut());
    long nextFailover = next(start, plan.failover() == null ? null : plan.failover().every());
    long nextStatus = start + STATUS_MILLIS;
    int frozen = -1;
    long thawAt = 0;
    try (Progress progress = quiet ? null : Progress.start("chaos",
        plan.duration().toSeconds(), () -> (System.currentTimeMillis() - start) / 1000)) {
      for (long now = start; now < until; now = System.currentTimeMillis()) {
        tick.run(now);
        if (now >= nextKill) {
          int slot = r.workers.pickWorking(random);
          if (slot >= 0) {
            r.workers.kill(slot);
            kills++;
          }
          nextKill = now + plan.kill().next(random).toMillis();
        }
        if (frozen >= 0 && now >= thawAt) {
          r.workers.thaw(frozen);
          frozen = -1;
          nextFreeze = now + plan.freeze().next(random).toMillis();
        }
        if (frozen < 0 && now >= nextFreeze) {
          int slot = r.workers.pickWorking(random);
          if (slot >= 0) {
            r.workers.freeze(slot);
            frozen = slot;
            thawAt = now + plan.freezeFor().toMillis();
            freezes++;
          } else {
            nextFreeze = now + 500;
          }
        }
        if (now >= nextTerm) {
          int slot = r.workers.pickWorking(random);
          if (slot >= 0) {
            r.workers.terminate(slot);
            terms++;
            nextTerm = now + term.next(random).toMillis();
          } else {
            nextTerm = now + 500;
          }
        }
        if (now >= nextRestart && restarter.idle()) {
          restarter.restart(200 + random.nextInt(800));
          nextRestart = now + plan.restart().next(random).toMillis();
        }
        if (failovers != null && failovers.idle()) {
          if (nextFailover == Long.MAX_VALUE) {
            // The last one ended: the next one comes a while after, not after its start.
            nextFailover = next(now, plan.failover().every());
          } else if (now >= nextFailover) {
            failovers.begin(plan.failover().lag().toMillis(), 500 + random.nextInt(1_000));
            nextFailover = Long.MAX_VALUE;
          }
        }
        if (now >= nextCut) {
          r.proxy.cutOne(random);
          nextCut = now + plan.cut().next(random).toMillis();
        }
        r.workers.replaceExited();
        if (r.workers.exitedByThemselves() > 10L * workers) {
          throw new CommandFailure(1, "worker processes keep exiting by themselves; see "
              + r.directory.resolve(ChaosWorkers.LOG));
        }
        if (!quiet && now >= nextStatus) {
          nextStatus += STATUS_MILLIS;
          out.printf(Locale.ROOT, "%s%n", status.line((now - start) / 1000, this));
          out.flush();
        }
        Thread.sleep(TICK_MILLIS);
      }
    }
    restarter.finish();
    if (failovers != null) {
      failovers.finish();
    }
    end = System.currentTimeMillis();
  }

  /** Before the drain: the proxy stops cutting and delaying, every frozen worker resumes. */
  void calm() throws Exception {
    if (r.proxy != null) {
      r.proxy.calm();
    }
    r.workers.thawAll();
  }

  /**
   * The header's list of faults; {@code term} null: no SIGTERMs. {@code cuts}: what the proxy
   * cuts ("a connection", "a store connection").
   */
  static String describe(ChaosCommand.Plan plan, ChaosTime.Range term, ChaosProxy proxy,
      String cuts) {
    List<String> faults = new ArrayList<>();
    if (plan.kill() != null) {
      faults.add("kill -9 a worker every " + plan.kill());
    }
    if (plan.freeze() != null) {
      faults.add("SIGSTOP a worker for " + ChaosTime.format(plan.freezeFor()) + " every "
          + plan.freeze());
    }
    if (term != null) {
      faults.add("SIGTERM a worker (graceful stop) every " + term);
    }
    if (plan.restart() != null) {
      faults.add("kill -9 the store and restart it every " + plan.restart());
    }
    if (plan.failover() != null) {
      faults.add("kill -9 the store's primary and fail over every " + plan.failover().every()
          + (plan.failover().lag().isZero() ? "" : " (its replica paused "
          + ChaosTime.format(plan.failover().lag()) + " before)"));
    }
    if (proxy != null) {
      faults.add("proxy on 127.0.0.1:" + proxy.port() + " cuts " + cuts + " every "
          + plan.cut() + " and delays " + ChaosProxy.DELAY_PERCENT + "% of chunks by up to "
          + ChaosProxy.MAX_DELAY_MILLIS + " ms");
    }
    return faults.isEmpty() ? "none" : String.join("; ", faults);
  }

  private long next(long from, ChaosTime.Range range) {
    return range == null ? Long.MAX_VALUE : from + range.next(random).toMillis();
  }

  /**
   * Waits until the workers showed their first effect ({@code started}: the JVMs started, the
   * store and broker reached), replacing workers that exit and topping up meanwhile.
   *
   * @param what what no worker did, for the message: "finished a delivery"
   */
  static void awaitFirst(ChaosCommand.Resources r, int workers, String what,
      Started started, Tick tick) throws Exception {
    long deadline = System.currentTimeMillis() + ChaosCommand.START_MILLIS;
    while (!started.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "no worker " + what + " within "
            + ChaosCommand.START_MILLIS / 1000 + " s; see "
            + r.directory.resolve(ChaosWorkers.LOG));
      }
      r.workers.replaceExited();
      if (r.workers.exitedByThemselves() > 3L * workers) {
        throw new CommandFailure(CommandFailure.CANNOT_RUN, "worker processes exit at start; "
            + "see " + r.directory.resolve(ChaosWorkers.LOG));
      }
      tick.run(System.currentTimeMillis());
      Thread.sleep(50);
    }
  }

  /** Whether the workers showed their first effect; may throw (it reads over JDBC). */
  @FunctionalInterface
  interface Started {
    boolean getAsBoolean() throws Exception;
  }

  long kills() {
    return kills;
  }

  long freezes() {
    return freezes;
  }

  long terms() {
    return terms;
  }

  long restarts() {
    return restarter.restarts();
  }

  /** The failovers finished; empty without --failover. */
  List<ChaosFailover.Failover> failovers() {
    return failovers == null ? List.of() : failovers.failovers();
  }

  /** When the faults started and ended (epoch millis). */
  long start() {
    return start;
  }

  long end() {
    return end;
  }
}
