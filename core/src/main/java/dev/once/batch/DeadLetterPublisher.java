package dev.once.batch;

/**
 * Where messages given up on go. {@link #publish} must return only once the dead letter is durable
 * (acknowledged by the broker: a publisher confirm, a Kafka ack, a {@code SendMessage} response),
 * and throw otherwise: the original message is then not acknowledged and comes again.
 *
 * <p>It is called <em>before</em> the failure is stored: a crash in between runs the message again
 * after the lease, and it may be dead-lettered twice, but it is never lost. A duplicate of a
 * message dead-lettered and stored is a replay, acknowledged without a second dead letter.
 *
 * @param <M> the message type
 */
@FunctionalInterface
public interface DeadLetterPublisher<M> {

  /** Publishes {@code letter} durably, or throws. */
  void publish(DeadLetter<M> letter) throws Exception;

  /**
   * A publisher that refuses: for adapters whose broker dead-letters by itself (a redrive policy)
   * and handlers that never fail terminally. A message that needs a dead letter is then retried.
   */
  static <M> DeadLetterPublisher<M> none() {
    return letter -> {
      throw new IllegalStateException("no dead-letter publisher: " + letter.reason() + " for "
          + (letter.key() == null ? "a message without a key" : letter.key())
          + " cannot be dead-lettered");
    };
  }
}
