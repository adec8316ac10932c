package dev.once.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Publishes dead letters on a channel of its own in confirm mode and returns only once the broker
 * confirmed each one: mandatory, so a dead letter no queue would take is an error rather than
 * silently dropped. The channel is opened on first use and again after any failure (a channel
 * error such as a missing exchange closes it). Its own channel, not the consuming one: a channel
 * error here must not requeue the consumer's unacknowledged deliveries. Not API.
 */
public final class ConfirmedPublisher implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(ConfirmedPublisher.class.getName());

  private final Connection connection;
  private final Duration timeout;
  /** The reply text of the last message the broker returned as unroutable on this channel. */
  private final AtomicReference<String> returned = new AtomicReference<>();
  private Channel channel;

  public ConfirmedPublisher(Connection connection, Duration timeout) {
    this.connection = connection;
    this.timeout = timeout;
  }

  /** The connection the dead letters go through. */
  public Connection connection() {
    return connection;
  }

  /**
   * Publishes and waits for the broker's confirm.
   *
   * @throws IOException      if the broker refused it (nack) or could not route it
   * @throws TimeoutException if no confirm came within the timeout
   */
  public synchronized void publish(String exchange, String routingKey,
      AMQP.BasicProperties properties, byte[] body)
      throws IOException, InterruptedException, TimeoutException {
    Channel ch = open();
    returned.set(null);
    boolean confirmed;
    try {
      ch.basicPublish(exchange, routingKey, true, properties, body);
      // The broker sends basic.return before basic.ack for an unroutable mandatory message, and
      // the client handles both in order on its connection thread: a return is seen by then.
      confirmed = ch.waitForConfirms(timeout.toMillis());
    } catch (TimeoutException e) {
      abandon(); // an unconfirmed publish would be waited for again by the next one
      TimeoutException timedOut = new TimeoutException("no publisher confirm for the dead letter"
          + " to exchange '" + exchange + "' within " + timeout);
      timedOut.initCause(e);
      throw timedOut;
    } catch (IOException | RuntimeException | InterruptedException e) {
      abandon();
      throw e;
    }
    if (!confirmed) {
      throw new IOException("the broker refused (nack) the dead letter to exchange '" + exchange
          + "'");
    }
    String unroutable = returned.get();
    if (unroutable != null) {
      throw new IOException("the dead letter could not be routed: exchange '" + exchange
          + "' has no queue bound for routing key '" + routingKey + "' (" + unroutable + ")");
    }
  }

  private Channel open() throws IOException {
    if (channel != null && channel.isOpen()) {
      return channel;
    }
    Channel ch = connection.createChannel();
    if (ch == null) {
      throw new IOException("no channel available on the connection (channel-max reached)");
    }
    ch.confirmSelect();
    ch.addReturnListener(r -> returned.set(r.getReplyCode() + " " + r.getReplyText()));
    channel = ch;
    return ch;
  }

  private void abandon() {
    Channel ch = channel;
    channel = null;
    if (ch != null && ch.isOpen()) {
      try {
        ch.abort();
      } catch (IOException | RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "could not abort the dead-letter channel", e);
      }
    }
  }

  @Override
  public synchronized void close() {
    Channel ch = channel;
    channel = null;
    if (ch != null && ch.isOpen()) {
      try {
        ch.close();
      } catch (IOException | TimeoutException | RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "could not close the dead-letter channel", e);
      }
    }
  }
}
