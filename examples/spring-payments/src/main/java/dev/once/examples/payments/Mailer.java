package dev.once.examples.payments;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/**
 * Stands for a mail provider, which cannot deduplicate: sending twice mails twice. It can be told
 * to be down for the next few sends, as real ones sometimes are.
 */
@Component
public class Mailer {

  private final List<String> sent = new CopyOnWriteArrayList<>();
  private final AtomicInteger outage = new AtomicInteger();

  /**
   * Mails {@code text} to {@code to}.
   *
   * @throws IllegalStateException while the provider is down (a retry may succeed)
   */
  public void send(String to, String text) {
    if (outage.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      throw new IllegalStateException("mail provider unavailable");
    }
    sent.add(to + ": " + text);
  }

  /** Makes the next {@code sends} sends fail. */
  public void downFor(int sends) {
    outage.set(sends);
  }

  /** Every mail sent, as "to: text", in order. */
  public List<String> sent() {
    return List.copyOf(sent);
  }
}
