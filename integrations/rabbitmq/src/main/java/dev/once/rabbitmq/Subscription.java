package dev.once.rabbitmq;

import dev.once.rabbitmq.internal.ConsumerWorker;
import java.time.Duration;

/**
 * One running consumer of a queue, started by {@link IdempotentRabbitConsumer#start}: its channel,
 * its {@code basicConsume} and its worker thread. {@link #close()} stops it.
 */
public final class Subscription implements AutoCloseable {

  private final String queue;
  private final String consumerTag;
  private final ConsumerWorker worker;
  private final Thread thread;
  private final Duration closeTimeout;

  Subscription(String queue, String consumerTag, ConsumerWorker worker, Thread thread,
      Duration closeTimeout) {
    this.queue = queue;
    this.consumerTag = consumerTag;
    this.worker = worker;
    this.thread = thread;
    this.closeTimeout = closeTimeout;
  }

  /** The queue consumed. */
  public String queue() {
    return queue;
  }

  /** The broker's consumer tag of this subscription. */
  public String consumerTag() {
    return consumerTag;
  }

  /**
   * Whether it still consumes: false once closed, or once its channel closed for good (the
   * connection closed by the application, a channel error, the consumer cancelled by the broker).
   * A connection that recovers automatically keeps it running.
   */
  public boolean isRunning() {
    return worker.isRunning() && thread.isAlive();
  }

  /**
   * Why it stopped on its own (a channel error, the broker cancelling the consumer, an
   * {@code Error} thrown by a handler), or null.
   */
  public Throwable failure() {
    return worker.failure();
  }

  /**
   * Stops consuming: the message being handled finishes and its outcome is stored, the claims of
   * the rest of its batch are released, the final messages are acknowledged, and the channel is
   * closed, so the broker requeues every message not acknowledged (held ones included). Waits up
   * to the builder's {@code closeTimeout} for the handler to finish, then closes the channel
   * anyway (the handler's outcome is still stored when it returns). Idempotent.
   */
  @Override
  public void close() {
    worker.stop();
    if (Thread.currentThread() == thread) {
      return; // called from a handler: the worker ends after it returns
    }
    try {
      if (!worker.awaitEnd(closeTimeout)) {
        worker.closeChannel();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      worker.closeChannel();
    }
  }

  @Override
  public String toString() {
    return "Subscription[queue=" + queue + ", consumerTag=" + consumerTag + ", running="
        + isRunning() + "]";
  }
}
