package dev.once.testkit;

import java.util.List;
import java.util.Map;

/**
 * The side effects of a test's handlers, by event id, so that a doubled effect is counted rather
 * than hidden; kept where a consumer's death cannot take them ({@link MemoryEffects memory of the
 * test}, or a {@link TableEffects table}). Each effect may name the group it was seen in (a
 * partition, a message group), so that tests can check the order within a group. Thread-safe.
 */
public interface Effects {

  /** The group of effects recorded without one. */
  String NO_GROUP = "";

  /**
   * Records one effect of {@code eventId}, seen in {@code group}.
   *
   * @param eventId the event the effect belongs to
   * @param group the ordering group it was seen in (a partition, a message group), or
   *     {@link #NO_GROUP}
   */
  void record(String eventId, String group);

  /**
   * Records one effect of {@code eventId}, in {@link #NO_GROUP}.
   *
   * @param eventId the event the effect belongs to
   */
  default void record(String eventId) {
    record(eventId, NO_GROUP);
  }

  /**
   * How many effects each event had.
   *
   * @return a snapshot: event id to number of effects, without events that had none
   */
  Map<String, Integer> counts();

  /**
   * How many effects one event had.
   *
   * @param eventId the event
   * @return the number of its effects, 0 if none
   */
  default int count(String eventId) {
    return counts().getOrDefault(eventId, 0);
  }

  /**
   * The event ids with an effect in {@code group}, in the order the effects happened.
   *
   * @param group the ordering group
   * @return a snapshot, one entry per effect
   */
  List<String> sequence(String group);

  /**
   * The event ids of every effect, of every group, in the order the effects happened.
   *
   * @return a snapshot, one entry per effect
   */
  List<String> sequence();
}
