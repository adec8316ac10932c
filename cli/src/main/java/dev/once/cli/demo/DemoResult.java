package dev.once.cli.demo;

import dev.once.cli.support.Latencies;
import java.time.Duration;

/**
 * The figures of one {@code once demo}: the same delivery plan run without and with Once.
 *
 * @param withoutOnce workers charge on every delivery
 * @param withOnce    workers charge through {@code Once.call}
 */
record DemoResult(Figures withoutOnce, Figures withOnce) {

  /**
   * Whether Once kept its promise: every event charged exactly once, its receipt mailed exactly
   * once through the durable step, every zombie fenced. The receipts mailed inside the work double
   * by design: that is what the demo shows.
   */
  boolean onceHeld() {
    Mails inStep = withOnce.receipts().inStep();
    return withOnce.doubleCharges() == 0 && withOnce.lostEvents() == 0
        && inStep.doubled() == 0 && inStep.never() == 0
        && withOnce.zombieWritesAccepted() == 0 && withOnce.unacknowledged() == 0;
  }

  /**
   * What a {@link ReceiptMailer} (no idempotency: every call is a mail) received.
   *
   * @param sent    mails sent
   * @param doubled events mailed more than once
   * @param never   events never mailed
   */
  record Mails(long sent, int doubled, int never) {}

  /**
   * The receipt of every event, mailed three ways by the same workers, with the same crashes, to
   * three mailers without idempotency.
   *
   * @param inWork     the mail sent inside the work (without Once: in the handler)
   * @param keyIgnored the mail sent inside the work with {@code attempt.key()}, which the mailer
   *                   ignores; null without Once
   * @param inStep     the mail sent in a durable {@code Step} whose reconciler searches the
   *                   mailer by the step key; null without Once
   * @param reconciled takeovers that found the receipt step started but not journaled, and the
   *                   mail by its step key, so did not send it again
   * @param replayed   takeovers that found the receipt step's result journaled (a crash after
   *                   the step), so neither sent nor searched
   */
  record Receipts(Mails inWork, Mails keyIgnored, Mails inStep, long reconciled, long replayed) {}

  /**
   * What one run did.
   *
   * @param events               payment events published
   * @param deliveries           messages handed to workers, redeliveries included
   * @param crashes              deliveries after which the worker crashed, after the charge and
   *                             the receipts, before acknowledging
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
   *                             progress), the time spent in Once less the downstream calls'
   *                             own (the receipt step's journal writes count as Once's); null
   *                             without Once
   * @param receipts             what the receipt mailers received
   * @param timeline             deliveries handled per {@link Timeline#BUCKET_MILLIS} ms
   */
  record Figures(int events, long deliveries, long crashes, long sideEffects,
      long gatewayDeduplicated, int doubleCharges, int lostEvents, long replayed, long inProgress,
      long takeovers, long fencedZombies, long zombieWritesAccepted, int unacknowledged,
      Duration elapsed, Latencies.Summary addedLatency, Receipts receipts, long[] timeline) {

    /** Deliveries per second of wall-clock time. */
    double throughput() {
      double seconds = elapsed.toNanos() / 1e9;
      return seconds > 0 ? deliveries / seconds : 0;
    }
  }
}
