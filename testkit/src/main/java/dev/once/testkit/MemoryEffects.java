package dev.once.testkit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** {@link Effects} in this JVM's memory: for tests whose consumers all run in the test's JVM. */
public final class MemoryEffects implements Effects {

  private final List<String[]> log = new ArrayList<>();

  /** No effects yet. */
  public MemoryEffects() {}

  @Override
  public synchronized void record(String eventId, String group) {
    log.add(new String[] {Objects.requireNonNull(eventId, "eventId"),
        Objects.requireNonNull(group, "group")});
  }

  @Override
  public synchronized Map<String, Integer> counts() {
    Map<String, Integer> counts = new HashMap<>();
    for (String[] e : log) {
      counts.merge(e[0], 1, Integer::sum);
    }
    return counts;
  }

  @Override
  public synchronized List<String> sequence(String group) {
    List<String> out = new ArrayList<>();
    for (String[] e : log) {
      if (e[1].equals(group)) {
        out.add(e[0]);
      }
    }
    return out;
  }

  @Override
  public synchronized List<String> sequence() {
    List<String> out = new ArrayList<>();
    for (String[] e : log) {
      out.add(e[0]);
    }
    return out;
  }
}
