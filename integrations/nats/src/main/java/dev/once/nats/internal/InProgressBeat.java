package dev.once.nats.internal;

import io.nats.client.Message;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The broker-side twin of the lease heartbeat for one fetched batch: every period (a third of the
 * consumer's AckWait) each message of the batch gets an in-progress ack ({@code +WPI}), which
 * restarts its AckWait, so JetStream does not hand it to another consumer while the batch runs.
 * Closed before the batch is settled: no in-progress ack follows an ack or a nak. Not API.
 */
final class InProgressBeat implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(InProgressBeat.class.getName());

  private final List<Message> messages;
  private ScheduledFuture<?> future;
  private boolean closed;
  private boolean warned;

  private InProgressBeat(List<Message> messages) {
    this.messages = messages;
  }

  /** Beats for {@code messages} every {@code period}, the first after one period. */
  static InProgressBeat start(ScheduledExecutorService scheduler, List<Message> messages,
      Duration period) {
    InProgressBeat beat = new InProgressBeat(messages);
    long nanos = period.toNanos();
    synchronized (beat) {
      beat.future = scheduler.scheduleAtFixedRate(beat::beat, nanos, nanos, TimeUnit.NANOSECONDS);
    }
    return beat;
  }

  /** A beat that does nothing: in-progress acks disabled. */
  static InProgressBeat none() {
    InProgressBeat beat = new InProgressBeat(List.of());
    beat.closed = true;
    return beat;
  }

  private synchronized void beat() {
    if (closed) {
      return;
    }
    for (Message message : messages) {
      try {
        message.inProgress();
      } catch (RuntimeException e) {
        // The connection is closed or down: the messages come back after their AckWait, to
        // replay what this batch stored. Said once per batch, not per message and beat.
        if (!warned) {
          warned = true;
          LOG.log(System.Logger.Level.WARNING, "in-progress ack failed ({0}); the batch's"
              + " messages may be redelivered after their AckWait", e.toString());
        }
      }
    }
  }

  /** Stops the beats; a beat under way finishes first. */
  @Override
  public synchronized void close() {
    closed = true;
    if (future != null) {
      future.cancel(false);
    }
  }
}
