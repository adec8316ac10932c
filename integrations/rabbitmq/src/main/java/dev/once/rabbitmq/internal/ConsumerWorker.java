package dev.once.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.ShutdownSignalException;
import dev.once.batch.BatchOutcome;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One subscription of the plain consumer: the client's dispatch thread only buffers deliveries
 * ({@link #handleDelivery}); this worker's own thread collects them into batches of up to the
 * prefetch (what has arrived, plus what arrives within the linger), runs each batch through the
 * engine, acknowledges the final messages and holds the others until their retry time. Every
 * operation on the consuming channel after {@code basicConsume} runs on the worker's thread.
 * Not API.
 */
public final class ConsumerWorker extends DefaultConsumer implements Runnable {

  private static final System.Logger LOG = System.getLogger(ConsumerWorker.class.getName());
  /** The longest wait for a delivery, so that a stop or a due hold is noticed soon enough. */
  private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final DeliveryProcessor processor;
  private final ConfirmedPublisher publisher;
  private final Settler settler;
  private final Settings settings;
  private final BlockingQueue<Delivery> inbox = new LinkedBlockingQueue<>();
  private final CountDownLatch ended = new CountDownLatch(1);
  private volatile boolean running = true;
  private volatile Throwable failure;
  /** The tag of the last delivery buffered (set on the client's dispatch thread). */
  private volatile long lastTag;
  /**
   * Deliveries up to this tag came before the channel last closed: the broker has requeued them,
   * so they are dropped here (a recovered channel's tags continue above it).
   */
  private volatile long staleUpTo;

  public ConsumerWorker(Channel channel, DeliveryProcessor processor,
      ConfirmedPublisher publisher) {
    super(channel);
    this.processor = processor;
    this.publisher = publisher;
    this.settings = processor.settings();
    this.settler = new Settler(channel, "queue " + settings.queue(), true, delay -> { });
  }

  @Override
  public void handleDelivery(String consumerTag, Envelope envelope, AMQP.BasicProperties properties,
      byte[] body) {
    lastTag = envelope.getDeliveryTag();
    inbox.add(new Delivery(envelope, properties, body));
  }

  @Override
  public void handleCancel(String consumerTag) {
    LOG.log(System.Logger.Level.WARNING, "the broker cancelled the consumer of queue {0} (was the"
        + " queue deleted?); stopping", settings.queue());
    failure = new IOException("the broker cancelled the consumer of queue " + settings.queue());
    running = false;
  }

  @Override
  public void handleShutdownSignal(String consumerTag, ShutdownSignalException signal) {
    staleUpTo = lastTag;
    settler.forgetAll();
    // A connection failure of a recovering connection comes back with the consumer re-registered;
    // anything else (closed by the application, a channel error) does not.
    boolean recovers = getChannel() instanceof Recoverable && signal.isHardError()
        && !signal.isInitiatedByApplication();
    if (recovers) {
      LOG.log(System.Logger.Level.INFO, "connection of the consumer of queue {0} lost ({1});"
          + " unacknowledged messages are requeued by the broker; waiting for recovery",
          settings.queue(), signal.getMessage());
      return;
    }
    if (!signal.isInitiatedByApplication()) {
      failure = signal;
      LOG.log(System.Logger.Level.WARNING, "channel of the consumer of queue {0} closed ({1});"
          + " stopping", settings.queue(), signal.getMessage());
    }
    running = false;
  }

  @Override
  public void run() {
    try {
      while (running) {
        settler.releaseDue();
        long wait = Math.min(IDLE_NANOS, settler.nanosUntilNextDue());
        Delivery first = inbox.poll(wait, TimeUnit.NANOSECONDS);
        if (first == null) {
          continue;
        }
        List<Delivery> batch = collect(first);
        if (!batch.isEmpty()) {
          process(batch);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      // An Error is the process going down: the engine stored the outcomes of the messages handled
      // before it; closing the channel below hands the rest back to the broker.
      failure = e;
      throw e;
    } finally {
      running = false;
      closeChannel();
      publisher.close();
      ended.countDown();
    }
  }

  /** The first delivery and those that follow within the linger, up to the free prefetch. */
  private List<Delivery> collect(Delivery first) throws InterruptedException {
    List<Delivery> batch = new ArrayList<>();
    add(batch, first);
    // Held deliveries occupy prefetch slots: the broker sends no more than what is left.
    int target = Math.max(1, settings.prefetch() - settler.heldCount());
    long linger = settings.linger().toNanos();
    List<Delivery> drained = new ArrayList<>();
    while (batch.size() < target) {
      drained.clear();
      inbox.drainTo(drained, target - batch.size());
      drained.forEach(d -> add(batch, d));
      if (batch.size() >= target || linger <= 0) {
        break;
      }
      Delivery next = inbox.poll(linger, TimeUnit.NANOSECONDS);
      if (next == null) {
        break;
      }
      add(batch, next);
    }
    return batch;
  }

  private void add(List<Delivery> batch, Delivery d) {
    if (d.getEnvelope().getDeliveryTag() > staleUpTo) {
      batch.add(d);
    }
  }

  private void process(List<Delivery> batch) {
    Channel channel = getChannel();
    BatchOutcome<Delivery> outcome;
    try {
      outcome = processor.process(batch, publisher, () -> !running || !channel.isOpen());
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "a batch of " + batch.size() + " messages of queue "
          + settings.queue() + " failed; they are requeued after " + settings.initialBackoff(), e);
      settler.holdAll(batch.stream().map(d -> d.getEnvelope().getDeliveryTag()).toList(),
          settings.initialBackoff());
      return;
    }
    settler.settle(outcome.items(), d -> d.getEnvelope().getDeliveryTag(),
        processor.executor().once().clock().instant());
  }

  /** Asks the worker to stop after the message being handled (the rest of its batch released). */
  public void stop() {
    running = false;
  }

  public boolean isRunning() {
    return running;
  }

  /** Why the worker stopped on its own, or null. */
  public Throwable failure() {
    return failure;
  }

  /** Waits for the worker to end. */
  public boolean awaitEnd(Duration timeout) throws InterruptedException {
    return ended.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Closes the consuming channel: the broker requeues every delivery not acknowledged. */
  public void closeChannel() {
    Channel channel = getChannel();
    if (!channel.isOpen()) {
      return;
    }
    try {
      channel.close();
    } catch (IOException | TimeoutException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not close the channel of queue "
          + settings.queue(), e);
    }
  }
}
