package dev.once.batch;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * What {@link BatchExecutor#process} did with each message of a batch, in the order given.
 *
 * @param items one result per message, {@code items.get(i).index() == i}
 * @param <M>   the message type
 */
public record BatchOutcome<M>(List<ItemResult<M>> items) {

  public BatchOutcome {
    items = List.copyOf(items);
  }

  /** Whether every message is final. */
  public boolean isComplete() {
    return firstUnfinishedIndex() < 0;
  }

  /** The index of the first message that is not final, or -1. */
  public int firstUnfinishedIndex() {
    for (ItemResult<M> item : items) {
      if (!item.isFinal()) {
        return item.index();
      }
    }
    return -1;
  }

  /** How many messages ended with {@code status}. */
  public int count(ItemResult.Status status) {
    int n = 0;
    for (ItemResult<M> item : items) {
      if (item.status() == status) {
        n++;
      }
    }
    return n;
  }

  /** How long from {@code now} until the earliest retry; zero when due or when complete. */
  public Duration retryDelay(Instant now) {
    Instant earliest = null;
    for (ItemResult<M> item : items) {
      Instant at = item.retryAt();
      if (at != null && (earliest == null || at.isBefore(earliest))) {
        earliest = at;
      }
    }
    if (earliest == null || !earliest.isAfter(now)) {
      return Duration.ZERO;
    }
    return Duration.between(now, earliest);
  }
}
