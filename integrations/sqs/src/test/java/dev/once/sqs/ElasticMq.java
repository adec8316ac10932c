package dev.once.sqs;

import dev.once.testkit.Await;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.elasticmq.rest.sqs.SQSRestServer;
import org.elasticmq.rest.sqs.SQSRestServerBuilder;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * ElasticMQ, an SQS-compatible server, in this JVM on a free loopback port (started once per test
 * JVM, stopped when it exits), and the SQS calls the tests make as producers and observers.
 */
final class ElasticMq {

  private static final SQSRestServer SERVER;
  static final URI ENDPOINT;
  /** A client shared by the tests (producing, observing) and by consumers not meant to fail. */
  static final SqsClient SQS;

  static {
    SERVER = SQSRestServerBuilder.withDynamicPort().withInterface("127.0.0.1").start();
    int port = SERVER.waitUntilStarted().localAddress().getPort();
    ENDPOINT = URI.create("http://127.0.0.1:" + port);
    SQS = newClient();
    Runtime.getRuntime().addShutdownHook(new Thread(SERVER::stopAndWait));
  }

  private ElasticMq() {}

  /** A client of its own (to close as a fault). */
  static SqsClient newClient() {
    return SqsClient.builder()
        .endpointOverride(ENDPOINT)
        .region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create("test", "test")))
        .build();
  }

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A standard queue with a unique name. */
  static String queue(String prefix) {
    return create(unique(prefix), Map.of());
  }

  /** A FIFO queue with a unique name, without content-based deduplication. */
  static String fifoQueue(String prefix) {
    return create(unique(prefix) + ".fifo", Map.of(QueueAttributeName.FIFO_QUEUE, "true"));
  }

  /** A standard queue whose redrive policy moves a message to {@code dlqUrl} after n receives. */
  static String queueWithRedrive(String prefix, String dlqUrl, int maxReceiveCount) {
    String arn = SQS.getQueueAttributes(b -> b.queueUrl(dlqUrl)
        .attributeNames(QueueAttributeName.QUEUE_ARN)).attributes().get(QueueAttributeName.QUEUE_ARN);
    return create(unique(prefix), Map.of(QueueAttributeName.REDRIVE_POLICY,
        "{\"maxReceiveCount\":\"" + maxReceiveCount + "\",\"deadLetterTargetArn\":\"" + arn + "\"}"));
  }

  private static String create(String name, Map<QueueAttributeName, String> attributes) {
    return SQS.createQueue(b -> b.queueName(name).attributes(attributes)).queueUrl();
  }

  /** Sends {@code body} with the attribute {@code idempotency-key} = {@code key}. */
  static String send(String queueUrl, String key, String body) {
    return send(queueUrl, body, Map.of(IdempotentSqsConsumer.Builder.DEFAULT_KEY_ATTRIBUTE, key));
  }

  static String send(String queueUrl, String body, Map<String, String> attributes) {
    Map<String, MessageAttributeValue> values = new HashMap<>();
    attributes.forEach((name, value) -> values.put(name,
        MessageAttributeValue.builder().dataType("String").stringValue(value).build()));
    return SQS.sendMessage(SendMessageRequest.builder().queueUrl(queueUrl).messageBody(body)
        .messageAttributes(values).build()).messageId();
  }

  /** Sends to a FIFO queue in {@code group}, deduplicated by {@code deduplicationId}. */
  static String sendFifo(String queueUrl, String group, String deduplicationId, String body) {
    return SQS.sendMessage(b -> b.queueUrl(queueUrl).messageBody(body).messageGroupId(group)
        .messageDeduplicationId(deduplicationId)).messageId();
  }

  /** Messages in the queue, visible or not (in flight, delayed). */
  static int messagesIn(String queueUrl) {
    Map<QueueAttributeName, String> a = SQS.getQueueAttributes(b -> b.queueUrl(queueUrl)
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE,
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED)).attributes();
    return Integer.parseInt(a.getOrDefault(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES, "0"))
        + Integer.parseInt(a.getOrDefault(
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE, "0"))
        + Integer.parseInt(a.getOrDefault(
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED, "0"));
  }

  /**
   * Receives and deletes what the queue has, until {@code count} messages were read or nothing
   * more comes (short waits).
   */
  static List<Message> drain(String queueUrl, int count) {
    List<Message> out = new ArrayList<>();
    long deadline = System.nanoTime() + Await.DEFAULT.toNanos();
    while (out.size() < count && System.nanoTime() < deadline) {
      List<Message> got = SQS.receiveMessage(b -> b.queueUrl(queueUrl).maxNumberOfMessages(10)
          .waitTimeSeconds(1).messageAttributeNames("All")
          .messageSystemAttributeNames(MessageSystemAttributeName.ALL)).messages();
      for (Message m : got) {
        out.add(m);
        SQS.deleteMessage(b -> b.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
      }
    }
    return out;
  }

  static String attribute(Message m, String name) {
    MessageAttributeValue v = m.messageAttributes().get(name);
    return v == null ? null : v.stringValue();
  }
}
