package dev.once.batch;

import dev.once.Attempt;

/**
 * The business logic run once per message's idempotency key.
 *
 * @param <M> the message type
 */
@FunctionalInterface
public interface MessageHandler<M> {

  /**
   * Handles {@code message}. Returning means done: the outcome is stored and the message
   * acknowledged, and no later failure (storing, acking) runs it again. Throwing is a failure: a
   * terminal one (by the {@link dev.once.FailurePolicy}) is stored and dead-lettered, a retryable
   * one is retried after a backoff, then dead-lettered once the attempts are used up.
   *
   * @param attempt the claim's attempt (its {@code key()} for downstream deduplication, its
   *                {@code step(...)} for durable steps); null only for a message processed
   *                without a key under {@link NoKeyPolicy#PROCESS_UNPROTECTED}
   */
  void handle(M message, Attempt attempt) throws Exception;
}
