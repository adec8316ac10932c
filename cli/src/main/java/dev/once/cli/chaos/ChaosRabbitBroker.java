package dev.once.cli.chaos;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.MessageProperties;
import dev.once.Once;
import dev.once.cli.support.CommandFailure;
import dev.once.rabbitmq.IdempotentRabbitConsumer;
import dev.once.rabbitmq.Subscription;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * RabbitMQ for {@code once chaos --broker rabbitmq}: a durable classic queue named after the run,
 * a direct dead-letter exchange ({@code <queue>.dlx}) and its queue ({@code <queue>.dlq}), bound
 * by the queue's name. Events are published persistent, with publisher confirms, keyed by their
 * {@code message-id}; workers consume through {@link IdempotentRabbitConsumer}.
 *
 * <p>Connections ask for a 2 s heartbeat, so that a worker frozen past it loses its connection
 * and the broker hands its unacknowledged messages to the others (and the woken zombie finds its
 * leases taken over), as a real network partition would.
 */
final class ChaosRabbitBroker extends ChaosBroker {

  private static final int HEARTBEAT_SECONDS = 2;
  private static final long CONFIRM_MILLIS = 30_000;

  private Connection connection;
  private Channel channel;
  private String server = "";

  ChaosRabbitBroker(Target target) {
    super(target);
  }

  private String queue() {
    return target.name();
  }

  private String deadLetterExchange() {
    return target.name() + ".dlx";
  }

  private String deadLetterQueue() {
    return target.name() + ".dlq";
  }

  private ConnectionFactory factory() {
    ConnectionFactory f = new ConnectionFactory();
    try {
      f.setUri(target.uri());
    } catch (Exception e) {
      throw new IllegalArgumentException("--broker-uri " + display(target.uri())
          + " is not an AMQP URI (amqp://user:password@host:5672/vhost): " + e.getMessage(), e);
    }
    f.setConnectionTimeout(5_000);
    f.setHandshakeTimeout(10_000);
    f.setRequestedHeartbeat(HEARTBEAT_SECONDS);
    f.setAutomaticRecoveryEnabled(true);
    f.setNetworkRecoveryInterval(500);
    return f;
  }

  @Override
  void connect() {
    try {
      connection = factory().newConnection("once-chaos");
      channel = connection.createChannel();
      channel.confirmSelect();
      Object version = connection.getServerProperties().get("version");
      server = version == null ? "" : " " + version;
    } catch (IllegalArgumentException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, e.getMessage());
    } catch (Exception e) {
      throw unreachable(target, e);
    }
  }

  @Override
  String describe() {
    return "RabbitMQ" + server + " at " + display(target.uri()) + ", queue " + queue()
        + " (classic, durable), dead letters to exchange " + deadLetterExchange() + " -> queue "
        + deadLetterQueue();
  }

  @Override
  String keyDescription() {
    return "same message-id";
  }

  @Override
  void create() throws IOException {
    channel.queueDeclare(queue(), true, false, false, null);
    channel.exchangeDeclare(deadLetterExchange(), BuiltinExchangeType.DIRECT, true);
    channel.queueDeclare(deadLetterQueue(), true, false, false, null);
    channel.queueBind(deadLetterQueue(), deadLetterExchange(), queue());
  }

  @Override
  void publish(List<Event> events) throws Exception {
    for (Event e : events) {
      AMQP.BasicProperties properties = MessageProperties.PERSISTENT_BASIC.builder()
          .messageId(e.id()).contentType("text/plain").build();
      channel.basicPublish("", queue(), properties, e.body());
    }
    channel.waitForConfirmsOrDie(CONFIRM_MILLIS);
  }

  @Override
  long waiting() throws IOException {
    return channel.queueDeclarePassive(queue()).getMessageCount();
  }

  @Override
  long unsettled() throws IOException {
    return waiting();
  }

  @Override
  boolean countsUnacknowledged() {
    return false;
  }

  @Override
  List<byte[]> deadLetters() throws Exception {
    List<byte[]> bodies = new ArrayList<>();
    // Taken without acknowledgement; closing the channel hands them all back to the queue.
    Channel reader = connection.createChannel();
    try {
      for (GetResponse r = reader.basicGet(deadLetterQueue(), false); r != null;
           r = reader.basicGet(deadLetterQueue(), false)) {
        bodies.add(r.getBody());
      }
    } finally {
      reader.close();
    }
    return bodies;
  }

  @Override
  void delete() throws IOException {
    channel.queueDelete(queue());
    channel.queueDelete(deadLetterQueue());
    channel.exchangeDelete(deadLetterExchange());
  }

  @Override
  Consumer consume(Once once, Handler handler, String member) throws Exception {
    Connection own = factory().newConnection("once-chaos-worker");
    Subscription subscription;
    try {
      subscription = IdempotentRabbitConsumer
          .builder(once, (delivery, attempt) -> handler.handle(delivery.getBody(), attempt))
          .queue(queue())
          .scope(target.scope())
          .deadLetterExchange(deadLetterExchange())
          .prefetch(target.batch())
          .closeTimeout(Duration.ofSeconds(20))
          .build()
          .start(own);
    } catch (Exception | Error e) {
      own.abort(1_000);
      throw e;
    }
    return new Consumer() {
      @Override
      public boolean running() {
        return subscription.isRunning();
      }

      @Override
      public String failure() {
        Throwable t = subscription.failure();
        return t == null ? "the subscription stopped" : causes(t);
      }

      @Override
      public void close() {
        subscription.close();
        try {
          own.close(5_000);
        } catch (IOException | RuntimeException e) {
          own.abort(1_000);
        }
      }
    };
  }

  @Override
  public void close() {
    if (connection != null) {
      try {
        connection.close(5_000);
      } catch (IOException | RuntimeException e) {
        connection.abort(1_000);
      }
    }
  }
}
