package dev.once.sqs.internal;

import java.util.Map;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/** How keys, groups and names are read off SQS messages and queue URLs. Not API. */
public final class MessageKeys {

  private MessageKeys() {}

  /**
   * The default idempotency key: a FIFO message's {@code MessageDeduplicationId}, else the string
   * value of the message attribute {@code attribute}, else the SQS message id.
   */
  public static String defaultKey(Message message, String attribute) {
    String deduplicationId = message.attributes().get(MessageSystemAttributeName.MESSAGE_DEDUPLICATION_ID);
    if (deduplicationId != null && !deduplicationId.isBlank()) {
      return deduplicationId;
    }
    String value = attribute(message, attribute);
    return value != null ? value : message.messageId();
  }

  /** The string value of a message attribute, or null when absent or blank. */
  public static String attribute(Message message, String name) {
    Map<String, MessageAttributeValue> attributes = message.messageAttributes();
    MessageAttributeValue value = attributes == null ? null : attributes.get(name);
    if (value == null || value.stringValue() == null || value.stringValue().isBlank()) {
      return null;
    }
    return value.stringValue();
  }

  /** A FIFO message's {@code MessageGroupId}; null on a standard queue (no ordering). */
  public static String group(Message message) {
    return message.attributes().get(MessageSystemAttributeName.MESSAGE_GROUP_ID);
  }

  /** The queue's name: the last path segment of its URL. */
  public static String queueName(String queueUrl) {
    String url = queueUrl.endsWith("/") ? queueUrl.substring(0, queueUrl.length() - 1) : queueUrl;
    return url.substring(url.lastIndexOf('/') + 1);
  }

  /** Whether a queue URL names a FIFO queue (its name ends in {@code .fifo}). */
  public static boolean isFifo(String queueUrl) {
    return queueName(queueUrl).endsWith(".fifo");
  }
}
