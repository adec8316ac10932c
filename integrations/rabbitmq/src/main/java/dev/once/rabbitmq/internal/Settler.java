package dev.once.rabbitmq.internal;

import com.rabbitmq.client.Channel;
import dev.once.batch.ItemResult;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.LongConsumer;
import java.util.function.ToLongFunction;

/**
 * Settles the deliveries of one channel once the batch engine has said what became of them: a
 * final one is acknowledged; any other is <em>held</em> (left unacknowledged) until its
 * {@code retryAt} and then requeued with {@code basicNack(requeue=true)}, so the broker delivers it
 * again no sooner than the engine asked, without a hot loop and without a second copy of it.
 *
 * <p>A failed ack or nack (the channel or connection is gone) is logged, never a failure of the
 * work: the broker requeues every unacknowledged delivery of a closed channel, and a redelivery of
 * a message whose outcome is stored is a replay.
 *
 * <p>With {@code multipleAcks}, the finals below every held delivery are acknowledged by one
 * {@code basicAck(tag, multiple=true)}: only for a channel whose every delivery passes through this
 * settler, in delivery order (the plain consumer's own channel). Thread-safe. Not API.
 */
public final class Settler {

  private static final System.Logger LOG = System.getLogger(Settler.class.getName());

  private final Channel channel;
  /** What the channel consumes, for the logs ("queue orders"). */
  private final String source;
  private final boolean multipleAcks;
  /** Told the delay, in nanoseconds, of each new hold (to schedule its release). */
  private final LongConsumer onHold;
  /** Deliveries held, by delivery tag: when to requeue each ({@link System#nanoTime()}). */
  private final TreeMap<Long, Long> held = new TreeMap<>();

  public Settler(Channel channel, String source, boolean multipleAcks, LongConsumer onHold) {
    this.channel = channel;
    this.source = source;
    this.multipleAcks = multipleAcks;
    this.onHold = onHold;
  }

  /** The channel settled. */
  public Channel channel() {
    return channel;
  }

  /**
   * Acknowledges the final deliveries of {@code items} and holds the others until their
   * {@code retryAt} (judged against {@code now}, the engine's clock). Deliveries sharing a tag (a
   * producer-side batch split by the listener container) are final only when all of them are.
   */
  public synchronized <M> void settle(List<ItemResult<M>> items, ToLongFunction<M> tagOf,
      Instant now) {
    long nanos = System.nanoTime();
    Map<Long, Long> due = new LinkedHashMap<>();
    TreeSet<Long> finals = new TreeSet<>();
    for (ItemResult<M> item : items) {
      long tag = tagOf.applyAsLong(item.message());
      if (item.isFinal()) {
        if (!due.containsKey(tag)) {
          finals.add(tag);
        }
      } else {
        finals.remove(tag);
        long wait = Math.max(0, Duration.between(now, item.retryAt()).toNanos());
        due.merge(tag, nanos + wait, Math::max);
      }
    }
    hold(due, nanos);
    ack(finals);
  }

  /** Holds every delivery of {@code tags} for {@code delay} (the batch failed as a whole). */
  public synchronized void holdAll(List<Long> tags, Duration delay) {
    long nanos = System.nanoTime();
    Map<Long, Long> due = new LinkedHashMap<>();
    for (long tag : tags) {
      due.put(tag, nanos + delay.toNanos());
    }
    hold(due, nanos);
  }

  private void hold(Map<Long, Long> due, long nanos) {
    if (due.isEmpty()) {
      return;
    }
    if (!channel.isOpen()) {
      return; // the broker has requeued them already
    }
    held.putAll(due);
    for (long at : due.values()) {
      onHold.accept(at - nanos);
    }
  }

  private void ack(TreeSet<Long> finals) {
    if (finals.isEmpty()) {
      return;
    }
    long lowestHeld = held.isEmpty() ? Long.MAX_VALUE : held.firstKey();
    long upTo = -1;
    List<Long> singles = new ArrayList<>();
    for (long tag : finals) {
      if (multipleAcks && tag < lowestHeld) {
        upTo = tag;
      } else {
        singles.add(tag);
      }
    }
    try {
      if (upTo >= 0) {
        channel.basicAck(upTo, true);
      }
      for (long tag : singles) {
        channel.basicAck(tag, false);
      }
    } catch (IOException | RuntimeException e) {
      held.clear();
      LOG.log(System.Logger.Level.INFO, "could not acknowledge " + finals.size()
          + " handled messages of " + source + " (" + e + "): their outcomes are stored;"
          + " the broker delivers them again and the redeliveries replay");
    }
  }

  /** Requeues the held deliveries whose time has come. */
  public synchronized void releaseDue() {
    if (held.isEmpty()) {
      return;
    }
    long nanos = System.nanoTime();
    List<Long> tags = new ArrayList<>();
    for (Iterator<Map.Entry<Long, Long>> it = held.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Long, Long> e = it.next();
      if (e.getValue() - nanos <= 0) {
        tags.add(e.getKey());
        it.remove();
      }
    }
    nack(tags);
  }

  /** Requeues every held delivery now (closing). */
  public synchronized void releaseAll() {
    List<Long> tags = new ArrayList<>(held.keySet());
    held.clear();
    nack(tags);
  }

  /** Forgets the held deliveries: their channel closed, and the broker requeued them. */
  public synchronized void forgetAll() {
    held.clear();
  }

  /** Nanoseconds until the next held delivery is due; {@code Long.MAX_VALUE} if none. */
  public synchronized long nanosUntilNextDue() {
    long nanos = System.nanoTime();
    long next = Long.MAX_VALUE;
    for (long at : held.values()) {
      next = Math.min(next, Math.max(0, at - nanos));
    }
    return next;
  }

  /** How many deliveries are held (they count against the prefetch). */
  public synchronized int heldCount() {
    return held.size();
  }

  private void nack(List<Long> tags) {
    if (tags.isEmpty()) {
      return;
    }
    try {
      for (long tag : tags) {
        channel.basicNack(tag, false, true);
      }
    } catch (IOException | RuntimeException e) {
      held.clear();
      LOG.log(System.Logger.Level.INFO, "could not requeue " + tags.size() + " messages of "
          + source + " (" + e + "): the broker delivers them again as the channel closed");
    }
  }
}
