package dev.once.examples.payments;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.stereotype.Component;

/**
 * Stands for a courier's booking API, which takes no idempotency key: booking twice sends two
 * vans. Refuses addresses it does not serve (any containing "nowhere").
 */
@Component
public class Courier {

  private final List<String> bookings = new CopyOnWriteArrayList<>();

  /**
   * Books a delivery to {@code address}.
   *
   * @return the tracking number
   * @throws UndeliverableException if no courier goes there
   */
  public String book(String address) {
    if (address == null || address.toLowerCase(java.util.Locale.ROOT).contains("nowhere")) {
      throw new UndeliverableException(address);
    }
    bookings.add(address);
    return "trk_" + bookings.size();
  }

  /** Every delivery booked, in order. */
  public List<String> bookings() {
    return List.copyOf(bookings);
  }
}
