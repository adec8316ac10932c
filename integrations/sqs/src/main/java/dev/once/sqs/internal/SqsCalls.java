package dev.once.sqs.internal;

import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.BatchResultErrorEntry;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchResponse;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * The batch calls on messages already received, 10 entries a call (SQS's limit). A failure is
 * logged and counted, never thrown: a message not deleted comes again and replays, a visibility
 * not changed lapses on its own. Not API.
 */
final class SqsCalls {

  private static final System.Logger LOG = System.getLogger(SqsCalls.class.getName());
  /** SQS's limit of entries per batch call. */
  static final int MAX_ENTRIES = 10;

  private SqsCalls() {}

  /** A message and the visibility timeout to give it, in seconds from now. */
  record Visibility(Message message, int seconds) {}

  /** Deletes {@code messages}; returns how many could not be deleted. */
  static int delete(SqsClient sqs, String queueUrl, List<Message> messages) {
    int failed = 0;
    for (int from = 0; from < messages.size(); from += MAX_ENTRIES) {
      List<Message> chunk = messages.subList(from, Math.min(messages.size(), from + MAX_ENTRIES));
      List<DeleteMessageBatchRequestEntry> entries = new ArrayList<>(chunk.size());
      for (int i = 0; i < chunk.size(); i++) {
        entries.add(DeleteMessageBatchRequestEntry.builder().id(Integer.toString(i))
            .receiptHandle(chunk.get(i).receiptHandle()).build());
      }
      try {
        DeleteMessageBatchResponse response =
            sqs.deleteMessageBatch(b -> b.queueUrl(queueUrl).entries(entries));
        failed += logFailed("delete", response.failed(), chunk);
      } catch (SdkException | IllegalStateException e) {
        // The outcomes are stored: these messages come again after their visibility timeout and
        // are replayed, never run again.
        LOG.log(System.Logger.Level.WARNING, "could not delete " + chunk.size() + " messages"
            + " whose outcome is stored; they will come again and be replayed", e);
        failed += chunk.size();
      }
    }
    return failed;
  }

  /** Changes the visibility timeout of each message; returns how many changes failed. */
  static int changeVisibility(SqsClient sqs, String queueUrl, List<Visibility> changes,
      String why) {
    int failed = 0;
    for (int from = 0; from < changes.size(); from += MAX_ENTRIES) {
      List<Visibility> chunk = changes.subList(from, Math.min(changes.size(), from + MAX_ENTRIES));
      List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>(chunk.size());
      List<Message> messages = new ArrayList<>(chunk.size());
      for (int i = 0; i < chunk.size(); i++) {
        Visibility v = chunk.get(i);
        entries.add(ChangeMessageVisibilityBatchRequestEntry.builder().id(Integer.toString(i))
            .receiptHandle(v.message().receiptHandle()).visibilityTimeout(v.seconds()).build());
        messages.add(v.message());
      }
      try {
        ChangeMessageVisibilityBatchResponse response =
            sqs.changeMessageVisibilityBatch(b -> b.queueUrl(queueUrl).entries(entries));
        failed += logFailed(why, response.failed(), messages);
      } catch (SdkException | IllegalStateException e) {
        LOG.log(System.Logger.Level.WARNING, "could not change the visibility of "
            + chunk.size() + " messages (" + why + ")", e);
        failed += chunk.size();
      }
    }
    return failed;
  }

  private static int logFailed(String what, List<BatchResultErrorEntry> failed,
      List<Message> chunk) {
    for (BatchResultErrorEntry entry : failed) {
      Message m = chunk.get(Integer.parseInt(entry.id()));
      LOG.log(System.Logger.Level.WARNING, "{0} of message {1} failed: {2} {3}", what,
          m.messageId(), entry.code(), entry.message());
    }
    return failed.size();
  }
}
