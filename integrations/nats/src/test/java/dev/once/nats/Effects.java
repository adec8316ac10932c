package dev.once.nats;

import java.util.Map;

/**
 * The side effects of the tests' handlers, keyed by event id, so that a doubled effect is counted
 * rather than hidden. Thread-safe.
 */
interface Effects {

  /** Records one effect of {@code eventId}. */
  void record(String eventId);

  /** How many effects each event had. */
  Map<String, Integer> counts();

  default int count(String eventId) {
    return counts().getOrDefault(eventId, 0);
  }
}
