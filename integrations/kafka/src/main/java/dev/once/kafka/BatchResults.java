package dev.once.kafka;

import dev.once.kafka.internal.BatchProcessor;

/** The public {@link BatchResult} of what the batch processor decided. */
final class BatchResults {

  private BatchResults() {}

  static BatchResult of(BatchProcessor.Processed p) {
    return new BatchResult(p.offsetsToCommit(), p.seekTo(), p.retryAt(), p.firstUnfinishedIndex(),
        p.handled(), p.replayed(), p.deadLettered(), p.unfinished());
  }
}
