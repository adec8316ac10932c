package dev.once.kafka;

import java.util.List;
import java.util.Map;

/**
 * The side effects of the tests' handlers, keyed by event id, so that a doubled effect is counted
 * rather than hidden. Thread-safe.
 */
interface Effects {

  /** Records one effect of {@code eventId}, seen on {@code partition}. */
  void record(String eventId, int partition);

  /** How many effects each event had. */
  Map<String, Integer> counts();

  /** The event ids with an effect on {@code partition}, in the order the effects happened. */
  List<String> sequence(int partition);

  default int count(String eventId) {
    return counts().getOrDefault(eventId, 0);
  }
}
