package dev.once.spring.rabbitmq;

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
 * declarations, publishes and reads (as once-rabbitmq's tests' Rabbit).
 */
final class RabbitBroker {

  static final String HOST = System.getenv().getOrDefault("ONCE_RABBITMQ_HOST", "127.0.0.1");
  static final int PORT =
      Integer.parseInt(System.getenv().getOrDefault("ONCE_RABBITMQ_PORT", "5672"));

  private static Connection connection;
  private static Channel admin;

  private RabbitBroker() {}

  /** The queue under test, its dead-letter exchange, and the queue bound to it. */
  record Topology(String queue, String deadLetterExchange, String deadLetterQueue) {}

  /** Spring Boot's properties for this server. */
  static String[] springProperties() {
    return new String[] {"spring.rabbitmq.host=" + HOST, "spring.rabbitmq.port=" + PORT,
        "spring.rabbitmq.username=guest", "spring.rabbitmq.password=guest"};
  }

  private static Channel admin() throws IOException {
    if (admin == null || !admin.isOpen()) {
      if (connection == null || !connection.isOpen()) {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(HOST);
        factory.setPort(PORT);
        factory.setUsername("guest");
        factory.setPassword("guest");
        try {
          connection = factory.newConnection("once-spring-boot-test");
        } catch (TimeoutException e) {
          throw new IOException(e);
        }
      }
      admin = connection.createChannel();
      admin.confirmSelect();
    }
    return admin;
  }

  /**
   * A fresh queue named after {@code purpose} and a unique suffix, with a direct dead-letter
   * exchange and a dead-letter queue bound to it by the queue's name.
   */
  static synchronized Topology topology(String purpose) {
    String q = "once-spring-" + purpose + "-" + UUID.randomUUID().toString().substring(0, 8);
    try {
      Channel ch = admin();
      ch.queueDeclare(q, false, false, false, null);
      ch.exchangeDeclare(q + ".dlx", "direct", false, false, null);
      ch.queueDeclare(q + ".dlq", false, false, false, null);
      ch.queueBind(q + ".dlq", q + ".dlx", q);
      return new Topology(q, q + ".dlx", q + ".dlq");
    } catch (IOException e) {
      throw new IllegalStateException("cannot declare on RabbitMQ at " + HOST + ":" + PORT, e);
    }
  }

  static synchronized void delete(Topology t) {
    try {
      Channel ch = admin();
      ch.queueDelete(t.queue());
      ch.queueDelete(t.deadLetterQueue());
      ch.exchangeDelete(t.deadLetterExchange());
    } catch (IOException | RuntimeException e) {
      admin = null; // best effort: a leftover test queue is harmless
    }
  }

  /** Publishes {@code body} to {@code queue} (default exchange) with a message id, confirmed. */
  static synchronized void publish(String queue, String messageId, String body) {
    try {
      Channel ch = admin();
      ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(messageId)
          .contentType("text/plain").build(), body.getBytes(StandardCharsets.UTF_8));
      ch.waitForConfirmsOrDie(10_000);
    } catch (IOException | InterruptedException | TimeoutException e) {
      throw new IllegalStateException(e);
    }
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
    Await.until(n + " messages in " + queue, Duration.ofSeconds(60), () -> {
      GetResponse r = get(queue);
      if (r != null) {
        out.add(r);
      }
      return out.size() >= n;
    }, () -> out.size() + " so far");
    return out;
  }

  private static synchronized GetResponse get(String queue) {
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
