package dev.once.nats;

import java.util.HashMap;
import java.util.Map;

/** Effects in this JVM's memory. */
final class MemoryEffects implements Effects {

  private final Map<String, Integer> counts = new HashMap<>();

  @Override
  public synchronized void record(String eventId) {
    counts.merge(eventId, 1, Integer::sum);
  }

  @Override
  public synchronized Map<String, Integer> counts() {
    return Map.copyOf(counts);
  }
}
