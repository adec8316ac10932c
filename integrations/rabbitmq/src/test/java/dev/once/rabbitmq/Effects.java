package dev.once.rabbitmq;

import java.util.List;
import java.util.Map;

/**
 * The side effects of the tests' handlers, by event id, so that a doubled effect is counted rather
 * than hidden; kept where a consumer's death cannot take them (memory of the test, or a table).
 * Thread-safe.
 */
interface Effects {

  /** Records one effect of {@code eventId}. */
  void record(String eventId);

  /** How many effects each event had. */
  Map<String, Integer> counts();

  /** The event ids, in the order their effects happened. */
  List<String> sequence();

  default int count(String eventId) {
    return counts().getOrDefault(eventId, 0);
  }
}
