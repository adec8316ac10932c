package dev.once.cli.chaos;

import dev.once.Once;
import dev.once.cli.support.CommandFailure;
import dev.once.sqs.IdempotentSqsConsumer;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;

/**
 * SQS (or an SQS-compatible server such as ElasticMQ) for {@code once chaos --broker sqs}: a
 * standard queue named after the run (visibility timeout of the run) and a queue for the dead
 * letters ({@code <queue>-dlq}), which the adapter sends to itself. Events carry their id in the
 * message attribute {@value IdempotentSqsConsumer.Builder#DEFAULT_KEY_ATTRIBUTE}, the adapter's
 * key. Workers consume through {@link IdempotentSqsConsumer}.
 *
 * <p>Credentials: the AWS SDK's default chain; for an endpoint on this machine without any,
 * dummy ones (ElasticMQ accepts anything).
 */
final class ChaosSqsBroker extends ChaosBroker {

  private SqsClient sqs;
  private String queueUrl;
  private String deadLetterUrl;

  ChaosSqsBroker(Target target) {
    super(target);
  }

  private String queue() {
    return target.name();
  }

  private String deadLetterQueue() {
    return target.name() + "-dlq";
  }

  private SqsClient client() {
    URI endpoint;
    try {
      endpoint = URI.create(target.uri());
    } catch (IllegalArgumentException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "--broker-uri " + target.uri()
          + " is not an SQS endpoint URL (https://sqs.eu-west-1.amazonaws.com, "
          + "http://127.0.0.1:9324): " + e.getMessage());
    }
    if (endpoint.getScheme() == null || endpoint.getHost() == null) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "--broker-uri " + target.uri()
          + " is not an SQS endpoint URL (https://sqs.eu-west-1.amazonaws.com, "
          + "http://127.0.0.1:9324)");
    }
    return SqsClient.builder()
        // One HTTP client, named: the class path holds two (the jar of once also has DynamoDB's).
        .httpClient(UrlConnectionHttpClient.builder().connectionTimeout(Duration.ofSeconds(5))
            .socketTimeout(Duration.ofSeconds(30)).build())
        .endpointOverride(endpoint)
        .region(Region.of(target.region()))
        .credentialsProvider(credentials(endpoint))
        .overrideConfiguration(ClientOverrideConfiguration.builder()
            .apiCallAttemptTimeout(Duration.ofSeconds(25))
            .apiCallTimeout(Duration.ofSeconds(60)).build())
        .build();
  }

  private static AwsCredentialsProvider credentials(URI endpoint) {
    DefaultCredentialsProvider chain = DefaultCredentialsProvider.builder().build();
    try {
      chain.resolveCredentials();
      return chain;
    } catch (RuntimeException none) {
      if (loopback(endpoint.getHost())) {
        return StaticCredentialsProvider.create(AwsBasicCredentials.create("once", "chaos"));
      }
      return chain; // the first call fails with the SDK's explanation
    }
  }

  private static boolean loopback(String host) {
    try {
      return host.equals("localhost") || InetAddress.getByName(host).isLoopbackAddress();
    } catch (Exception e) {
      return false;
    }
  }

  @Override
  void connect() {
    try {
      sqs = client();
      sqs.listQueues(r -> r.maxResults(1));
    } catch (CommandFailure e) {
      throw e;
    } catch (RuntimeException e) {
      close();
      throw unreachable(target, e);
    }
  }

  @Override
  String describe() {
    return "SQS at " + target.uri() + " (" + target.region() + "), queue " + queue()
        + " (standard, visibility timeout " + ChaosTime.format(target.ackWait())
        + "), dead letters to queue " + deadLetterQueue();
  }

  @Override
  String keyDescription() {
    return "same " + IdempotentSqsConsumer.Builder.DEFAULT_KEY_ATTRIBUTE + " message attribute";
  }

  @Override
  void create() {
    deadLetterUrl = sqs.createQueue(r -> r.queueName(deadLetterQueue())).queueUrl();
    queueUrl = sqs.createQueue(r -> r.queueName(queue()).attributes(Map.of(
        QueueAttributeName.VISIBILITY_TIMEOUT,
        Long.toString(Math.max(1, target.ackWait().toSeconds()))))).queueUrl();
  }

  @Override
  void publish(List<Event> events) {
    for (int from = 0; from < events.size(); from += 10) {
      List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
      for (int i = from; i < Math.min(events.size(), from + 10); i++) {
        Event e = events.get(i);
        entries.add(SendMessageBatchRequestEntry.builder().id(Integer.toString(i - from))
            .messageBody(new String(e.body(), StandardCharsets.UTF_8))
            .messageAttributes(Map.of(IdempotentSqsConsumer.Builder.DEFAULT_KEY_ATTRIBUTE,
                MessageAttributeValue.builder().dataType("String").stringValue(e.id()).build()))
            .build());
      }
      SendMessageBatchResponse response = sqs.sendMessageBatch(r -> r.queueUrl(queueUrl)
          .entries(entries));
      if (!response.failed().isEmpty()) {
        throw new IllegalStateException("SQS refused " + response.failed().size()
            + " messages: " + response.failed().get(0).message());
      }
    }
  }

  private long count(QueueAttributeName... names) {
    Map<QueueAttributeName, String> attributes = sqs.getQueueAttributes(r -> r
        .queueUrl(queueUrl).attributeNames(names)).attributes();
    long n = 0;
    for (QueueAttributeName name : names) {
      n += Long.parseLong(attributes.getOrDefault(name, "0"));
    }
    return n;
  }

  @Override
  long waiting() {
    return count(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES);
  }

  @Override
  long unsettled() {
    return count(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
        QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE,
        QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED);
  }

  @Override
  boolean countsUnacknowledged() {
    return true;
  }

  @Override
  List<byte[]> deadLetters() {
    List<byte[]> bodies = new ArrayList<>();
    List<String> receipts = new ArrayList<>();
    // Received (hidden for a minute) until none comes twice in a row, then made visible again.
    for (int empty = 0; empty < 2; ) {
      List<Message> got = sqs.receiveMessage(r -> r.queueUrl(deadLetterUrl)
          .maxNumberOfMessages(10).visibilityTimeout(60).waitTimeSeconds(1)).messages();
      if (got.isEmpty()) {
        empty++;
      }
      for (Message m : got) {
        bodies.add(m.body().getBytes(StandardCharsets.UTF_8));
        receipts.add(m.receiptHandle());
      }
    }
    for (String receipt : receipts) {
      sqs.changeMessageVisibility(r -> r.queueUrl(deadLetterUrl).receiptHandle(receipt)
          .visibilityTimeout(0));
    }
    return bodies;
  }

  @Override
  void delete() {
    if (queueUrl == null) {
      lookUp(sqs);
    }
    sqs.deleteQueue(r -> r.queueUrl(queueUrl));
    sqs.deleteQueue(r -> r.queueUrl(deadLetterUrl));
  }

  @Override
  Consumer consume(Once once, Handler handler, String member) {
    SqsClient own = client();
    lookUp(own);
    IdempotentSqsConsumer consumer = IdempotentSqsConsumer.builder(once, own, queueUrl,
            (message, attempt) -> handler.handle(message.body().getBytes(StandardCharsets.UTF_8),
                attempt))
        .scope(target.scope())
        .deadLetterQueue(deadLetterUrl)
        .batchSize(target.batch())
        .waitTime(Duration.ofSeconds(1))
        .visibilityTimeout(Duration.ofSeconds(Math.max(1, target.ackWait().toSeconds())))
        .build();
    return ChaosLoopConsumer.start("once-chaos-sqs", consumer::run, "the receive loop ended", () -> {
      consumer.close();
      own.close();
    });
  }

  /** Looks up the URLs of the run's queues (a worker, or a coordinator that did not make them). */
  private void lookUp(SqsClient client) {
    queueUrl = client.getQueueUrl(r -> r.queueName(queue())).queueUrl();
    deadLetterUrl = client.getQueueUrl(r -> r.queueName(deadLetterQueue())).queueUrl();
  }

  @Override
  public void close() {
    if (sqs != null) {
      sqs.close();
    }
  }
}
