package dev.once.sqs.internal;

import dev.once.Scheduler;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * The broker-side twin of the lease heartbeat: while a batch is received and processed, its
 * messages' visibility timeout is set back to the full timeout every third of it, so no other
 * consumer receives them meanwhile. Stopped before the batch is settled: once {@link #stop()}
 * returns, no extension is in flight that could undo the settling's own visibility changes.
 * Not API.
 */
final class VisibilityExtender implements Runnable {

  private final SqsClient sqs;
  private final String queueUrl;
  private final int seconds;
  private final List<Message> messages = new ArrayList<>();
  private boolean stopped;
  private Scheduler.Task task;

  VisibilityExtender(SqsClient sqs, String queueUrl, int seconds) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
    this.seconds = seconds;
  }

  /** Adds messages just received; starts the beats with the first. */
  synchronized void add(List<Message> received, Scheduler scheduler,
      java.time.Duration period) {
    messages.addAll(received);
    if (task == null && !stopped) {
      task = scheduler.scheduleAtFixedRate(this, period);
    }
  }

  /** One beat: every message of the batch visible to no one else for the full timeout again. */
  @Override
  public synchronized void run() {
    if (stopped || messages.isEmpty()) {
      return;
    }
    List<SqsCalls.Visibility> changes = new ArrayList<>(messages.size());
    for (Message m : messages) {
      changes.add(new SqsCalls.Visibility(m, seconds));
    }
    SqsCalls.changeVisibility(sqs, queueUrl, changes, "visibility extension");
  }

  /** No more beats; waits for a beat in flight to finish. */
  void stop() {
    Scheduler.Task scheduled;
    synchronized (this) {
      stopped = true;
      scheduled = task;
    }
    if (scheduled != null) {
      scheduled.cancel();
    }
  }
}
