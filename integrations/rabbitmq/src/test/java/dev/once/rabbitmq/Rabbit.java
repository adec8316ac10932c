package dev.once.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.once.testkit.Await;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeoutException;

/**
 * The RabbitMQ server of this machine (127.0.0.1:5672, guest/guest, or {@code ONCE_RABBITMQ_HOST}
 * / {@code ONCE_RABBITMQ_PORT}), and one admin channel (in confirm mode) for the tests'
 * declarations, publishes and reads.
 */
final class Rabbit {

  static final ConnectionFactory FACTORY = new ConnectionFactory();

  static {
    FACTORY.setHost(System.getenv().getOrDefault("ONCE_RABBITMQ_HOST", "127.0.0.1"));
    FACTORY.setPort(Integer.parseInt(System.getenv().getOrDefault("ONCE_RABBITMQ_PORT", "5672")));
    FACTORY.setUsername("guest");
    FACTORY.setPassword("guest");
  }

  private static Connection adminConnection;
  private static Channel admin;

  private Rabbit() {}

  /** The queue under test, its dead-letter exchange, and the queue bound to it. */
  record Topology(String queue, String deadLetterExchange, String deadLetterQueue) {}

  /** A new connection (the caller closes it). */
  static Connection connect() {
    try {
      return FACTORY.newConnection("once-rabbitmq-test");
    } catch (IOException | TimeoutException e) {
      throw new IllegalStateException("cannot connect to RabbitMQ at " + FACTORY.getHost() + ":"
          + FACTORY.getPort() + " (is rabbitmq-server running?)", e);
    }
  }

  private static Channel admin() throws IOException {
    if (admin == null || !admin.isOpen()) {
      if (adminConnection == null || !adminConnection.isOpen()) {
        adminConnection = connect();
      }
      admin = adminConnection.createChannel();
      admin.confirmSelect();
    }
    return admin;
  }

  /**
   * A fresh queue named after {@code purpose} and a unique suffix, with a direct dead-letter
   * exchange and a dead-letter queue bound to it by the queue's name.
   */
  static synchronized Topology topology(String purpose) {
    String q = "once-test-" + purpose + "-" + UUID.randomUUID().toString().substring(0, 8);
    try {
      Channel ch = admin();
      ch.queueDeclare(q, false, false, false, null);
      ch.exchangeDeclare(q + ".dlx", "direct", false, false, null);
      ch.queueDeclare(q + ".dlq", false, false, false, null);
      ch.queueBind(q + ".dlq", q + ".dlx", q);
      return new Topology(q, q + ".dlx", q + ".dlq");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static synchronized void delete(Topology t) {
    try {
      Channel ch = admin();
      ch.queueDelete(t.queue());
      ch.queueDelete(t.deadLetterQueue());
      ch.exchangeDelete(t.deadLetterExchange());
    } catch (IOException | RuntimeException e) {
      // best effort: a leftover test queue is harmless
      admin = null;
    }
  }

  static synchronized void declareExchange(String exchange) {
    try {
      admin().exchangeDeclare(exchange, "direct", false, true, null);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static synchronized void bind(String queue, String exchange, String routingKey) {
    try {
      admin().queueBind(queue, exchange, routingKey);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Publishes {@code body} to {@code queue} (default exchange), confirmed. */
  static void publish(String queue, String messageId, String body) {
    publish(queue, new AMQP.BasicProperties.Builder().messageId(messageId)
        .contentType("text/plain").build(), body);
  }

  static synchronized void publish(String queue, AMQP.BasicProperties properties, String body) {
    try {
      Channel ch = admin();
      ch.basicPublish("", queue, properties, body.getBytes(StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    } catch (IOException | InterruptedException | TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Messages with the given headers and message id. */
  static AMQP.BasicProperties withHeaders(String messageId, Map<String, Object> headers) {
    return new AMQP.BasicProperties.Builder().messageId(messageId).contentType("text/plain")
        .headers(headers).build();
  }

  /** How many messages wait in {@code queue} (ready: not delivered, or requeued). */
  static synchronized long ready(String queue) {
    try {
      return admin().queueDeclarePassive(queue).getMessageCount();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Takes (and acknowledges) exactly {@code n} messages from {@code queue}, waiting for them. */
  static List<GetResponse> take(String queue, int n) {
    List<GetResponse> out = new ArrayList<>();
    Await.until(n + " messages in " + queue, Duration.ofSeconds(30), () -> {
      GetResponse r = get(queue);
      if (r != null) {
        out.add(r);
      }
      return out.size() >= n;
    }, () -> out.size() + " so far");
    return out;
  }

  /** One message of {@code queue}, acknowledged, or null if none is ready. */
  static synchronized GetResponse get(String queue) {
    try {
      return admin().basicGet(queue, true);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static String body(GetResponse r) {
    return new String(r.getBody(), StandardCharsets.UTF_8);
  }

  static String header(GetResponse r, String name) {
    Map<String, Object> headers = r.getProps().getHeaders();
    Object value = headers == null ? null : headers.get(name);
    return value == null ? null : value.toString();
  }
}
