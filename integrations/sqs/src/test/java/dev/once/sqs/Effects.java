package dev.once.sqs;

import java.util.List;
import java.util.Map;

/**
 * The side effects of the tests' handlers, keyed by event id, so that a doubled effect is counted
 * rather than hidden. Thread-safe.
 */
interface Effects {

  /** Records one effect of {@code eventId}, of message group {@code group} ("" if none). */
  void record(String eventId, String group);

  /** How many effects each event had. */
  Map<String, Integer> counts();

  /** The event ids with an effect in {@code group}, in the order the effects happened. */
  List<String> sequence(String group);

  default int count(String eventId) {
    return counts().getOrDefault(eventId, 0);
  }
}
