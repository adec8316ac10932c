package dev.once.kafka;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * What {@link IdempotentConsumer#process} did with a batch, and what the caller must do next.
 *
 * <p>A record is <em>final</em> when its outcome will never change: handled and stored, a replayed
 * duplicate, or dead-lettered. Per partition, the records are final up to the first one that is
 * not (in progress elsewhere, failed and waiting for a retry, released at a stop); from there on
 * the partition must be read again.
 *
 * @param offsetsToCommit     per partition with progress, the offset just past its final prefix:
 *                            commit these (and nothing beyond)
 * @param seekTo              per partition with an unfinished record, that record's offset: seek
 *                            there so it and everything after it come again
 * @param retryAt             per partition in {@code seekTo}, when to read it again (pause it
 *                            until then)
 * @param firstUnfinishedIndex the index in the processed list of the first unfinished record, or
 *                            -1 when all are final (for Spring's {@code nack(index, sleep)})
 * @param handled             records whose handler ran and whose outcome was stored
 * @param replayed            duplicates skipped (the key's outcome was already stored)
 * @param deadLettered        records published to the dead-letter topic
 * @param unfinished          records left for later
 */
public record BatchResult(Map<TopicPartition, OffsetAndMetadata> offsetsToCommit,
    Map<TopicPartition, Long> seekTo, Map<TopicPartition, Instant> retryAt,
    int firstUnfinishedIndex, int handled, int replayed, int deadLettered, int unfinished) {

  public BatchResult {
    offsetsToCommit = Map.copyOf(offsetsToCommit);
    seekTo = Map.copyOf(seekTo);
    retryAt = Map.copyOf(retryAt);
  }

  /** Whether every record of the batch is final. */
  public boolean isComplete() {
    return firstUnfinishedIndex < 0;
  }

  /** How long from {@code now} until the earliest retry; zero when due or when complete. */
  public Duration retryDelay(Instant now) {
    Instant earliest = null;
    for (Instant at : retryAt.values()) {
      if (earliest == null || at.isBefore(earliest)) {
        earliest = at;
      }
    }
    if (earliest == null || !earliest.isAfter(now)) {
      return Duration.ZERO;
    }
    return Duration.between(now, earliest);
  }
}
