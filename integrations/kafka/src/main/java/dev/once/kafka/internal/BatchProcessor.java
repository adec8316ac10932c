package dev.once.kafka.internal;

import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.ItemResult;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The idempotent consumer on core's public {@link BatchExecutor}: a record's ordering group is its
 * partition, and a batch's per-record results become offsets. Per partition, the records are
 * final up to the first one that is not; the offset just past that prefix is committed, and the
 * partition is read again from the first record that is not final (those after it whose outcome
 * was stored then replay). Not API.
 */
public final class BatchProcessor<K, V> {

  private final Once once;
  private final BatchExecutor<ConsumerRecord<K, V>> executor;
  private final Settings settings;

  /** Over {@code executor}, whose ordering group must be the record's partition. */
  public BatchProcessor(Once once, BatchExecutor<ConsumerRecord<K, V>> executor,
      Settings settings) {
    this.once = once;
    this.executor = executor;
    this.settings = settings;
  }

  public Settings settings() {
    return settings;
  }

  public Instant now() {
    return once.clock().instant();
  }

  /**
   * Processes {@code records} (in the order a poll returns them: grouped by partition, each
   * partition in offset order).
   *
   * @param scope the scope of the idempotency keys
   * @param stop  asked between records: true to stop, releasing the claims not yet run
   */
  public Processed process(List<ConsumerRecord<K, V>> records, String scope,
      BooleanSupplier stop) {
    BatchOutcome<ConsumerRecord<K, V>> outcome = executor.process(records, scope, stop);
    Map<TopicPartition, List<ItemResult<ConsumerRecord<K, V>>>> byPartition =
        new LinkedHashMap<>();
    for (ItemResult<ConsumerRecord<K, V>> item : outcome.items()) {
      ConsumerRecord<K, V> r = item.message();
      byPartition.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
          tp -> new ArrayList<>()).add(item);
    }
    Map<TopicPartition, OffsetAndMetadata> commits = new LinkedHashMap<>();
    Map<TopicPartition, Long> seekTo = new LinkedHashMap<>();
    Map<TopicPartition, Instant> retryAt = new LinkedHashMap<>();
    int firstUnfinished = -1;
    int handled = 0;
    int replayed = 0;
    int deadLettered = 0;
    int unfinished = 0;
    for (Map.Entry<TopicPartition, List<ItemResult<ConsumerRecord<K, V>>>> partition
        : byPartition.entrySet()) {
      TopicPartition tp = partition.getKey();
      boolean broken = false;
      for (ItemResult<ConsumerRecord<K, V>> item : partition.getValue()) {
        if (broken) {
          unfinished++;
          continue;
        }
        if (!item.isFinal()) {
          broken = true;
          unfinished++;
          seekTo.put(tp, item.message().offset());
          retryAt.put(tp, item.retryAt());
          if (firstUnfinished < 0 || item.index() < firstUnfinished) {
            firstUnfinished = item.index();
          }
          continue;
        }
        switch (item.status()) {
          case HANDLED -> handled++;
          case REPLAYED -> replayed++;
          case DEAD_LETTERED -> deadLettered++;
          default -> throw new IllegalStateException("not a final status: " + item.status());
        }
        commits.put(tp, new OffsetAndMetadata(item.message().offset() + 1));
      }
    }
    return new Processed(commits, seekTo, retryAt, firstUnfinished, handled, replayed,
        deadLettered, unfinished);
  }

  /**
   * What {@link #process} decided, field for field the public {@code BatchResult} that the
   * consumer makes of it (so this package does not depend back on the public one).
   */
  public record Processed(Map<TopicPartition, OffsetAndMetadata> offsetsToCommit,
      Map<TopicPartition, Long> seekTo, Map<TopicPartition, Instant> retryAt,
      int firstUnfinishedIndex, int handled, int replayed, int deadLettered, int unfinished) {}
}
