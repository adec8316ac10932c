package dev.once.cli.demo;

import dev.once.cli.demo.DeliveryPlan.Message;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * An at-least-once queue in this JVM, like SQS or a Kafka consumer group seen from one handler: a
 * message is gone only once acknowledged; one that is not (the consumer crashed, or gave it back)
 * becomes visible again after the redelivery delay. Thread-safe.
 */
final class Broker {

  private final DelayQueue<Delivery> queue = new DelayQueue<>();
  private final int messages;
  private final AtomicInteger unacknowledged;
  private final AtomicLong sequence = new AtomicLong();
  private final LongAdder deliveries = new LongAdder();
  private final long redeliveryDelayNanos;

  Broker(List<Message> messages, Duration redeliveryDelay) {
    this.redeliveryDelayNanos = redeliveryDelay.toNanos();
    long now = System.nanoTime();
    for (Message message : messages) {
      queue.add(new Delivery(message, now, sequence.getAndIncrement()));
    }
    this.messages = messages.size();
    this.unacknowledged = new AtomicInteger(messages.size());
  }

  /** The next visible message, or null if none became visible within the timeout. */
  Delivery poll(long timeout, TimeUnit unit) throws InterruptedException {
    Delivery delivery = queue.poll(timeout, unit);
    if (delivery != null) {
      deliveries.increment();
    }
    return delivery;
  }

  /** The message was handled: it is never delivered again. */
  void acknowledge(Delivery delivery) {
    unacknowledged.decrementAndGet();
  }

  /**
   * The message was not acknowledged (the consumer crashed or gave it back): deliver it again once
   * the redelivery delay has passed.
   */
  void redeliverLater(Delivery delivery) {
    queue.add(new Delivery(delivery.message(), System.nanoTime() + redeliveryDelayNanos,
        sequence.getAndIncrement()));
  }

  /** Whether every message was acknowledged. */
  boolean drained() {
    return unacknowledged.get() == 0;
  }

  /** Messages not acknowledged yet. */
  int unacknowledged() {
    return unacknowledged.get();
  }

  /** Messages published: every copy of every event, not counting redeliveries. */
  int messages() {
    return messages;
  }

  /**
   * Messages acknowledged so far, from 0 to {@link #messages()}. Counted in messages, not events:
   * an event published twice is two messages, each acknowledged once.
   */
  int acknowledged() {
    return messages - unacknowledged.get();
  }

  /** Deliveries so far, redeliveries included. */
  long deliveries() {
    return deliveries.sum();
  }

  /**
   * One delivery of a message, visible from {@code visibleAt} ({@link System#nanoTime()});
   * {@code sequence} keeps equally visible deliveries in publication order.
   */
  record Delivery(Message message, long visibleAt, long sequence) implements Delayed {

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(visibleAt - System.nanoTime(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
      Delivery that = (Delivery) other;
      // Subtract before comparing: nanoTime values may wrap, their differences do not.
      int byTime = Long.compare(visibleAt - that.visibleAt, 0);
      return byTime != 0 ? byTime : Long.compare(sequence, that.sequence);
    }
  }
}
