package dev.once.internal;

import dev.once.IdempotencyKey;
import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;

/**
 * Publishes the dead letters of a {@link BatchEngine} through the user's publisher, which may
 * throw or be slow: the engine keeps the message's claim held (renewed) meanwhile and stores
 * the failure only once the letter is out. Not API.
 */
final class DeadLetterPublication<M> {

  private static final System.Logger LOG = System.getLogger(BatchEngine.class.getName());

  private final DeadLetterPublisher<M> publisher;

  DeadLetterPublication(DeadLetterPublisher<M> publisher) {
    this.publisher = publisher;
  }

  /** Publishes {@code letter}; false (logged) when it could not be: the message comes again. */
  boolean publish(DeadLetter<M> letter, IdempotencyKey key) {
    try {
      publisher.publish(letter);
      return true;
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      LOG.log(System.Logger.Level.WARNING, "could not publish the dead letter ("
          + letter.reason() + ") of " + (key == null ? "a message" : key.toString())
          + "; it will be delivered again", e);
      return false;
    }
  }
}
