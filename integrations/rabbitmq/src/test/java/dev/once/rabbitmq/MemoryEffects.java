package dev.once.rabbitmq;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Effects in this JVM's memory. */
final class MemoryEffects implements Effects {

  private final List<String> log = new ArrayList<>();

  @Override
  public synchronized void record(String eventId) {
    log.add(eventId);
  }

  @Override
  public synchronized Map<String, Integer> counts() {
    Map<String, Integer> counts = new HashMap<>();
    for (String e : log) {
      counts.merge(e, 1, Integer::sum);
    }
    return counts;
  }

  @Override
  public synchronized List<String> sequence() {
    return List.copyOf(log);
  }
}
