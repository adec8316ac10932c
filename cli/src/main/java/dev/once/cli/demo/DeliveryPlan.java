package dev.once.cli.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * What the simulated broker will do, decided up front from the seed so that the run without Once
 * and the run with Once face exactly the same duplicates and crashes.
 *
 * @param events   the payment events, one per index
 * @param messages every copy of every event the broker publishes, in delivery order
 */
record DeliveryPlan(List<Event> events, List<Message> messages) {

  /** At most this many extra copies of one event, so that {@code --duplicates 1} still ends. */
  static final int MAX_EXTRA_COPIES = 3;
  /** At most this many crashes while handling one message, so that {@code --crash-rate 1} ends. */
  static final int MAX_CRASHES_PER_MESSAGE = 2;
  /**
   * Share of crashes that are not deaths but pauses (a long GC, a frozen VM): the worker wakes up
   * after another one took over and tries to finish with its old fencing token.
   */
  static final double ZOMBIE_SHARE = 0.25;

  DeliveryPlan {
    events = List.copyOf(events);
    messages = List.copyOf(messages);
  }

  /**
   * One payment to charge.
   *
   * @param index       position in {@link #events()}
   * @param id          the event id, also the idempotency key
   * @param amountCents what to charge
   * @param payload     the message body; its fingerprint is checked on every duplicate
   */
  record Event(int index, String id, long amountCents, String payload) {}

  /**
   * One copy of an event on the queue.
   *
   * @param id             position in {@link #messages()}
   * @param event          index of the event it carries
   * @param plannedCrashes how many times a worker crashes after handling it, before acknowledging
   * @param zombieMask     bit {@code n} set when crash {@code n} is a pause rather than a death
   */
  record Message(int id, int event, int plannedCrashes, int zombieMask) {
    boolean isZombie(int crash) {
      return (zombieMask & (1 << crash)) != 0;
    }
  }

  /**
   * Every event once, plus another copy with probability {@code duplicates} (and again, up to
   * {@link #MAX_EXTRA_COPIES}), each copy with its crashes, all shuffled by {@code seed}.
   */
  static DeliveryPlan generate(int eventCount, double duplicates, double crashRate, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    List<Event> events = new ArrayList<>(eventCount);
    List<int[]> copies = new ArrayList<>();
    int width = Integer.toString(eventCount).length();
    for (int i = 0; i < eventCount; i++) {
      String id = String.format(Locale.ROOT, "evt-%0" + width + "d", i + 1);
      long amount = 100 + random.nextInt(99_900);
      String payload = String.format(Locale.ROOT,
          "{\"event\":\"%s\",\"amount\":%d,\"currency\":\"EUR\"}", id, amount);
      events.add(new Event(i, id, amount, payload));
      int extra = 0;
      while (extra < MAX_EXTRA_COPIES && random.nextDouble() < duplicates) {
        extra++;
      }
      for (int c = 0; c <= extra; c++) {
        int crashes = 0;
        int zombies = 0;
        while (crashes < MAX_CRASHES_PER_MESSAGE && random.nextDouble() < crashRate) {
          if (random.nextDouble() < ZOMBIE_SHARE) {
            zombies |= 1 << crashes;
          }
          crashes++;
        }
        copies.add(new int[] {i, crashes, zombies});
      }
    }
    // Fisher-Yates with the seeded generator: Collections.shuffle would need a java.util.Random.
    for (int i = copies.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int[] swap = copies.get(i);
      copies.set(i, copies.get(j));
      copies.set(j, swap);
    }
    List<Message> messages = new ArrayList<>(copies.size());
    for (int[] copy : copies) {
      messages.add(new Message(messages.size(), copy[0], copy[1], copy[2]));
    }
    return new DeliveryPlan(events, messages);
  }

  /** How many crashes the plan holds in all. */
  int plannedCrashes() {
    return messages.stream().mapToInt(Message::plannedCrashes).sum();
  }
}
