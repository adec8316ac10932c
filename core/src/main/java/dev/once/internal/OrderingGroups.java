package dev.once.internal;

import java.time.Instant;
import java.util.HashMap;
import java.util.Map;

/**
 * The ordering groups of one batch (a Kafka partition, an SQS FIFO message group): after the
 * first message of a group that is not final, the rest of the group waits, not delivered again
 * before that message. A null group orders nothing. Not API.
 */
final class OrderingGroups {

  private final Map<Object, Instant> blocked = new HashMap<>();

  /** When the messages of {@code group} may come again if one is blocking them, else null. */
  Instant blockedUntil(Object group) {
    return group == null ? null : blocked.get(group);
  }

  /** Records what became of a message of {@code group}: one that is not final blocks it. */
  void settled(Object group, Disposition disposition) {
    if (group != null && disposition.retryAt() != null) {
      blocked.putIfAbsent(group, disposition.retryAt());
    }
  }
}
