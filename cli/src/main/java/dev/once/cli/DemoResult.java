package dev.once.cli;

import java.time.Duration;

/**
 * The figures of one {@code once demo}: the same delivery plan run without and with Once.
 *
 * @param withoutOnce workers charge on every delivery
 * @param withOnce    workers charge through {@code Once.call}
 */
record DemoResult(Figures withoutOnce, Figures withOnce) {

  /** Whether Once kept its promise: every event charged exactly once, every zombie fenced. */
  boolean onceHeld() {
    return withOnce.doubleCharges() == 0 && withOnce.lostEvents() == 0
        && withOnce.zombieWritesAccepted() == 0 && withOnce.unacknowledged() == 0;
  }

  /**
   * What one run did.
   *
   * @param events               payment events published
   * @param deliveries           messages handed to workers, redeliveries included
   * @param crashes              deliveries after which the worker crashed before acknowledging
   * @param sideEffects          gateway calls that took money
   * @param gatewayDeduplicated  gateway calls answered by the gateway's idempotency-key cache
   * @param doubleCharges        events charged more than once
   * @param lostEvents           events never charged
   * @param replayed             duplicates answered from the stored outcome
   * @param inProgress           deliveries answered "in progress elsewhere" and given back
   * @param takeovers            claims taken over from a crashed worker after its lease passed
   * @param fencedZombies        paused workers whose late write was refused by the fencing token
   * @param zombieWritesAccepted paused workers whose late write was accepted: must stay 0
   * @param unacknowledged       messages still unacknowledged when the run stopped: must be 0
   * @param elapsed              wall-clock time of the run
   * @param addedLatency         per delivery answered by Once (executed, replayed or in
   *                             progress), the time spent in Once less the business logic's own;
   *                             null without Once
   * @param timeline             deliveries handled per {@link Timeline#BUCKET_MILLIS} ms
   */
  record Figures(int events, long deliveries, long crashes, long sideEffects,
      long gatewayDeduplicated, int doubleCharges, int lostEvents, long replayed, long inProgress,
      long takeovers, long fencedZombies, long zombieWritesAccepted, int unacknowledged,
      Duration elapsed, Latencies.Summary addedLatency, long[] timeline) {

    /** Deliveries per second of wall-clock time. */
    double throughput() {
      double seconds = elapsed.toNanos() / 1e9;
      return seconds > 0 ? deliveries / seconds : 0;
    }
  }
}
