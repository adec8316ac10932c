package dev.once.cli.demo;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * A receipt mailer in another service, and a downstream with no idempotency: every call sends a
 * mail, whatever reference it carries. Unlike the {@link PaymentGateway} it ignores an idempotency
 * key; what it offers is a search afterwards, "the mail sent with reference R", like most mail,
 * ledger and ERP APIs. Counts the mails sent per event. Thread-safe.
 */
final class ReceiptMailer {

  /** A short stand-in for a network round trip, as for the gateway. */
  private static final long LATENCY_NANOS = 100_000;

  private final AtomicIntegerArray mailsPerEvent;
  private final ConcurrentHashMap<String, String> mailByReference = new ConcurrentHashMap<>();
  private final AtomicLong mailIds = new AtomicLong();
  private final LongAdder sent = new LongAdder();

  ReceiptMailer(int events) {
    this.mailsPerEvent = new AtomicIntegerArray(events);
  }

  /**
   * Sends the receipt of {@code event}: a mail every time, also when {@code reference} was seen
   * before (the mailer keeps it only to be searched by it).
   *
   * @param reference stored with the mail for {@link #find}, or null
   * @return the mail id
   */
  String send(int event, String reference) {
    LockSupport.parkNanos(LATENCY_NANOS);
    String id = "mail_" + mailIds.incrementAndGet();
    mailsPerEvent.incrementAndGet(event);
    sent.increment();
    if (reference != null) {
      mailByReference.putIfAbsent(reference, id);
    }
    return id;
  }

  /** The mail sent with {@code reference}, if any: the only question this mailer answers. */
  Optional<String> find(String reference) {
    LockSupport.parkNanos(LATENCY_NANOS);
    return Optional.ofNullable(mailByReference.get(reference));
  }

  /** What it did, counted per event. */
  DemoResult.Mails mails() {
    int doubled = 0;
    int never = 0;
    for (int i = 0; i < mailsPerEvent.length(); i++) {
      int n = mailsPerEvent.get(i);
      if (n > 1) {
        doubled++;
      } else if (n == 0) {
        never++;
      }
    }
    return new DemoResult.Mails(sent.sum(), doubled, never);
  }
}
