package dev.once.kafka;

import dev.once.kafka.internal.BatchProcessor;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The poll loop of an {@link IdempotentConsumer} over a user's {@link Consumer}: poll, process the
 * batch, commit the final prefix of each partition, rewind and pause partitions with an unfinished
 * record until their retry time. Paused partitions keep the consumer polling, so waiting never
 * exceeds {@code max.poll.interval.ms} (the handlers of one poll batch must fit in it: size it
 * with {@code max.poll.records}).
 *
 * <p>Run it on a thread of its own ({@link #run()}); {@link #stop()} or {@link #close()} from any
 * thread ends it: the record being handled finishes, the claims of the rest of the batch are
 * released (so the next owner of the partition retakes them at once), the final offsets are
 * committed and the consumer is closed. On a rebalance the loop is between batches (Kafka calls
 * the rebalance listener inside {@code poll}), so no work is in flight; offsets not yet committed
 * are committed for the revoked partitions. An {@link Error} from a handler is taken as the death
 * of the process: the loop ends at once without committing or releasing anything, and
 * {@link #run()} rethrows it.
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class IdempotentConsumerLoop<K, V> implements Runnable, AutoCloseable {

  private static final System.Logger LOG = System.getLogger(IdempotentConsumerLoop.class.getName());
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(60);

  private final IdempotentConsumer<K, V> owner;
  private final BatchProcessor<K, V> processor;
  private final Consumer<K, V> consumer;
  private final List<String> topics;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean stopRequested = new AtomicBoolean();
  private final CountDownLatch finished = new CountDownLatch(1);
  // Touched by the loop thread only (the rebalance listener runs inside poll, on that thread).
  private final Map<TopicPartition, Instant> pausedUntil = new HashMap<>();
  private final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();

  IdempotentConsumerLoop(IdempotentConsumer<K, V> owner, Consumer<K, V> consumer,
      Collection<String> topics) {
    this.owner = owner;
    this.processor = owner.processor();
    this.consumer = Objects.requireNonNull(consumer, "consumer");
    Objects.requireNonNull(topics, "topics");
    if (topics.isEmpty()) {
      throw new IllegalArgumentException("topics must not be empty");
    }
    this.topics = List.copyOf(topics);
  }

  /**
   * Polls and processes until stopped, then closes the consumer. Runs once.
   *
   * @throws IllegalStateException if it already ran or was closed
   */
  @Override
  public void run() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("the loop already ran or was closed");
    }
    try {
      String scope = owner.scopeFor(processor.settings().scope() != null ? null
          : consumer.groupMetadata().groupId());
      consumer.subscribe(topics, new Rebalance());
      while (!stopRequested.get()) {
        resumeDue();
        ConsumerRecords<K, V> records;
        try {
          records = consumer.poll(pollTimeout());
        } catch (WakeupException e) {
          continue; // stop() woke us; the loop condition decides
        }
        if (records.isEmpty()) {
          commitPending();
          continue;
        }
        List<ConsumerRecord<K, V>> batch = new ArrayList<>(records.count());
        records.forEach(batch::add);
        BatchResult result;
        try {
          result = BatchResults.of(processor.process(batch, scope, stopRequested::get));
        } catch (RuntimeException | Error e) {
          // The engine stored what it could; nothing of this batch is committed, and every
          // partition is read again from its first record of the batch (those handled replay).
          rewind(batch);
          throw e;
        }
        pending.putAll(result.offsetsToCommit());
        commitPending();
        // On a stop too: the position of every partition goes back to its first unfinished
        // record before the consumer is closed, so no commit (an auto-commit on close, a
        // rebalance's) can ever pass a record that did not run.
        result.seekTo().forEach((tp, offset) -> {
          consumer.seek(tp, offset);
          if (!stopRequested.get()) {
            consumer.pause(List.of(tp));
            pausedUntil.put(tp, result.retryAt().get(tp));
          }
        });
      }
    } finally {
      try {
        consumer.close();
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "closing the consumer failed", e);
      }
      finished.countDown();
    }
  }

  /** Asks the loop to end after the record being handled; returns at once. Idempotent. */
  public void stop() {
    stopRequested.set(true);
    consumer.wakeup();
  }

  /** Whether {@link #stop()} or {@link #close()} was called. */
  public boolean isStopRequested() {
    return stopRequested.get();
  }

  /**
   * Stops the loop and waits up to 60 seconds for it to end (commit and close included). If the
   * loop never ran, closes the consumer.
   */
  @Override
  public void close() {
    stopRequested.set(true);
    if (started.compareAndSet(false, true)) {
      try {
        consumer.close();
      } finally {
        finished.countDown();
      }
      return;
    }
    consumer.wakeup();
    try {
      if (!finished.await(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "the consumer loop did not end within {0}",
            CLOSE_WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---------------------------------------------------------------------------------------------

  private Duration pollTimeout() {
    Duration timeout = processor.settings().pollTimeout();
    Instant now = processor.now();
    for (Instant at : pausedUntil.values()) {
      Duration untilResume = Duration.between(now, at);
      if (untilResume.compareTo(timeout) < 0) {
        timeout = untilResume.isNegative() ? Duration.ZERO : untilResume;
      }
    }
    return timeout;
  }

  private void resumeDue() {
    if (pausedUntil.isEmpty()) {
      return;
    }
    Instant now = processor.now();
    List<TopicPartition> due = new ArrayList<>();
    for (Iterator<Map.Entry<TopicPartition, Instant>> it = pausedUntil.entrySet().iterator();
        it.hasNext();) {
      Map.Entry<TopicPartition, Instant> e = it.next();
      if (!e.getValue().isAfter(now)) {
        due.add(e.getKey());
        it.remove();
      }
    }
    if (!due.isEmpty()) {
      consumer.resume(due);
    }
  }

  /** Seeks each partition of {@code batch} back to its first record in it. */
  private void rewind(List<ConsumerRecord<K, V>> batch) {
    Map<TopicPartition, Long> first = new HashMap<>();
    for (ConsumerRecord<K, V> r : batch) {
      first.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
    }
    first.forEach((tp, offset) -> {
      try {
        consumer.seek(tp, offset);
      } catch (RuntimeException e) {
        // No longer assigned: its next owner reads it from the last commit.
        LOG.log(System.Logger.Level.DEBUG, "could not rewind " + tp, e);
      }
    });
  }

  /** Commits the pending offsets; on failure keeps them for the next try (or revocation). */
  private void commitPending() {
    commit(pending, pending.keySet());
  }

  private void commit(Map<TopicPartition, OffsetAndMetadata> all, Collection<TopicPartition> which) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : which) {
      OffsetAndMetadata offset = all.get(tp);
      if (offset != null) {
        offsets.put(tp, offset);
      }
    }
    if (offsets.isEmpty()) {
      return;
    }
    for (int tries = 0; tries < 2; tries++) {
      try {
        consumer.commitSync(offsets);
        offsets.keySet().forEach(all::remove);
        return;
      } catch (WakeupException e) {
        // stop() woke the consumer during the commit; the wakeup is consumed, commit again.
      } catch (CommitFailedException | RebalanceInProgressException e) {
        // A rebalance is under way. Kept, not dropped: with the cooperative-sticky assignor the
        // partition usually stays here, its records already read, and nothing else would ever
        // commit them. They are committed at the next chance (the next batch or idle poll);
        // a partition that moves is committed in onPartitionsRevoked, or dropped if lost.
        LOG.log(System.Logger.Level.INFO, "offset commit refused by a rebalance ({0}); kept for"
            + " the next commit", e.getMessage());
        return;
      } catch (KafkaException e) {
        LOG.log(System.Logger.Level.WARNING, "offset commit failed; will try again", e);
        return;
      }
    }
  }

  /** Keeps the loop's per-partition state in step with the assignment. */
  private final class Rebalance implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      // Called inside poll(): the previous batch is done, so only its commit may be outstanding.
      commit(pending, partitions);
      partitions.forEach(tp -> {
        pending.remove(tp);
        pausedUntil.remove(tp);
      });
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      partitions.forEach(tp -> {
        pending.remove(tp);
        pausedUntil.remove(tp);
      });
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
  }
}
