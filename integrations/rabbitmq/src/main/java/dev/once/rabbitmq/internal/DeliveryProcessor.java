package dev.once.rabbitmq.internal;

import com.rabbitmq.client.Delivery;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetter;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Runs batches of deliveries through the consumer's one {@link BatchExecutor} (shared by all its
 * subscriptions, so an outcome one of them could not store is stored before any of them runs the
 * message again), publishing dead letters through the confirmed channel of the subscription whose
 * batch is running. Not API.
 */
public final class DeliveryProcessor {

  /** The publisher of the batch running on this thread (each subscription has its own thread). */
  private final ThreadLocal<ConfirmedPublisher> current = new ThreadLocal<>();
  private final Settings settings;
  private BatchExecutor<Delivery> executor;

  public DeliveryProcessor(Settings settings) {
    this.settings = settings;
  }

  /** Sets the executor (its dead-letter publisher: {@link #publish}, or a custom one). */
  public void executor(BatchExecutor<Delivery> executor) {
    this.executor = executor;
  }

  public BatchExecutor<Delivery> executor() {
    return executor;
  }

  public Settings settings() {
    return settings;
  }

  /** Processes one batch, dead letters going through {@code publisher}. */
  public BatchOutcome<Delivery> process(List<Delivery> batch, ConfirmedPublisher publisher,
      BooleanSupplier stop) {
    current.set(publisher);
    try {
      return executor.process(batch, settings.scope(), stop);
    } finally {
      current.remove();
    }
  }

  /** Publishes a dead letter to the dead-letter exchange and waits for the broker's confirm. */
  public void publish(DeadLetter<Delivery> letter) throws Exception {
    ConfirmedPublisher publisher = current.get();
    if (publisher == null) {
      throw new IllegalStateException("no dead-letter channel: not on a subscription's thread");
    }
    Delivery d = letter.message();
    DeadLetterMessages.Origin origin = new DeadLetterMessages.Origin(
        d.getEnvelope().getExchange(), d.getEnvelope().getRoutingKey(), settings.queue(),
        d.getProperties() == null ? null : d.getProperties().getMessageId());
    publisher.publish(settings.deadLetterExchange(), settings.deadLetterRoutingKey(),
        DeadLetterMessages.properties(d.getProperties(), origin, letter), d.getBody());
  }
}
