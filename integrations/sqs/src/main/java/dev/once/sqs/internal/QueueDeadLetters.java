package dev.once.sqs.internal;

import dev.once.batch.DeadLetter;
import dev.once.batch.DeadLetterPublisher;
import dev.once.sqs.DeadLetterAttributes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * Dead letters as {@code SendMessage} to an explicit dead-letter queue: the original body and
 * attributes plus why ({@link DeadLetterAttributes}). Returns once SQS answered the send, so the
 * dead letter is durable before the engine stores the failure. Not API.
 */
public final class QueueDeadLetters implements DeadLetterPublisher<Message> {

  private static final System.Logger LOG = System.getLogger(QueueDeadLetters.class.getName());
  /** SQS's limit of message attributes per message. */
  static final int MAX_ATTRIBUTES = 10;
  static final int MAX_EXCEPTION_MESSAGE = 4096;
  /** The group of dead letters on a FIFO dead-letter queue when the original had none. */
  static final String DEFAULT_GROUP = "once-dead-letters";

  private final SqsClient sqs;
  private final String queueUrl;
  private final String keyAttribute;
  private final boolean fifo;

  public QueueDeadLetters(SqsClient sqs, String queueUrl, String keyAttribute) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
    this.keyAttribute = keyAttribute;
    this.fifo = MessageKeys.isFifo(queueUrl);
  }

  @Override
  public void publish(DeadLetter<Message> letter) {
    Message original = letter.message();
    SendMessageRequest.Builder send = SendMessageRequest.builder()
        .queueUrl(queueUrl)
        .messageBody(original.body())
        .messageAttributes(attributes(letter));
    if (fifo) {
      String group = MessageKeys.group(original);
      // Deduplicated by the original message id: a dead letter published twice (a crash between
      // the send and the stored failure) within SQS's 5-minute window is kept once.
      send.messageGroupId(group != null ? group : DEFAULT_GROUP)
          .messageDeduplicationId(original.messageId());
    }
    sqs.sendMessage(send.build());
  }

  Map<String, MessageAttributeValue> attributes(DeadLetter<Message> letter) {
    Map<String, MessageAttributeValue> out = new LinkedHashMap<>();
    out.put(DeadLetterAttributes.REASON, text(letter.reason().name()));
    out.put(DeadLetterAttributes.EXCEPTION_CLASS, text(letter.exceptionClass()));
    String message = letter.exceptionMessage();
    if (!message.isBlank()) { // SQS refuses empty attribute values
      out.put(DeadLetterAttributes.EXCEPTION_MESSAGE, text(message.length() <= MAX_EXCEPTION_MESSAGE
          ? message : message.substring(0, MAX_EXCEPTION_MESSAGE)));
    }
    if (letter.key() != null) {
      out.put(DeadLetterAttributes.IDEMPOTENCY_KEY, text(letter.key().key()));
    }
    out.put(DeadLetterAttributes.ORIGINAL_MESSAGE_ID, text(letter.message().messageId()));
    out.put(DeadLetterAttributes.ATTEMPTS, MessageAttributeValue.builder().dataType("Number")
        .stringValue(Integer.toString(letter.attempts())).build());

    Map<String, MessageAttributeValue> originals = letter.message().messageAttributes();
    if (originals != null && !originals.isEmpty()) {
      // The key attribute first: redriven from the dead-letter queue, the message keeps its key.
      List<String> names = new ArrayList<>(originals.keySet());
      if (names.remove(keyAttribute)) {
        names.add(0, keyAttribute);
      }
      List<String> dropped = new ArrayList<>();
      for (String name : names) {
        if (out.containsKey(name)) {
          continue;
        }
        if (out.size() < MAX_ATTRIBUTES) {
          out.put(name, originals.get(name));
        } else {
          dropped.add(name);
        }
      }
      if (!dropped.isEmpty()) {
        LOG.log(System.Logger.Level.WARNING, "dead letter of message {0}: attributes {1} dropped"
            + " (SQS allows {2} per message)", letter.message().messageId(), dropped,
            MAX_ATTRIBUTES);
      }
    }
    return out;
  }

  private static MessageAttributeValue text(String value) {
    return MessageAttributeValue.builder().dataType("String").stringValue(value).build();
  }
}
