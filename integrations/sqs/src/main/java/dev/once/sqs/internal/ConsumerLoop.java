package dev.once.sqs.internal;

import dev.once.Once;
import dev.once.Scheduler;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.DeadLetterPublisher;
import dev.once.batch.ItemResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageResponse;

/**
 * The receive loop of an idempotent SQS consumer on core's public {@link BatchExecutor}: receive
 * (long poll, gathering receives up to the batch size), one {@code process} per batch with its
 * visibility extended meanwhile, then delete the final messages and give the others the
 * visibility timeout of their retry. A FIFO message's ordering group is its message group. Not API.
 */
public final class ConsumerLoop {

  private static final System.Logger LOG = System.getLogger(ConsumerLoop.class.getName());
  /** SQS's longest visibility timeout, 12 hours. */
  public static final int MAX_VISIBILITY_SECONDS = 43_200;
  /** SQS's largest receive. */
  public static final int MAX_RECEIVE = 10;
  private static final Duration FIRST_RECEIVE_BACKOFF = Duration.ofSeconds(1);
  private static final Duration MAX_RECEIVE_BACKOFF = Duration.ofSeconds(30);

  private final Once once;
  private final Settings settings;
  private final BatchExecutor<Message> executor;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean stopRequested = new AtomicBoolean();
  private final CountDownLatch stopSignal = new CountDownLatch(1);
  private final CountDownLatch finished = new CountDownLatch(1);
  /** Guards {@link #receiving} and interrupting the loop thread inside a receive. */
  private final Object receiveLock = new Object();
  private Thread loopThread;
  private boolean receiving;

  public ConsumerLoop(Once once, Settings settings) {
    this.once = once;
    this.settings = settings;
    DeadLetterPublisher<Message> deadLetters = settings.deadLetterQueueUrl() == null
        ? DeadLetterPublisher.none()
        : new QueueDeadLetters(settings.sqs(), settings.deadLetterQueueUrl(),
            settings.keyAttribute());
    this.executor = BatchExecutor.<Message>builder(once, settings.handler())
        .scope(settings.scope())
        .key(settings.keys())
        .fingerprint(settings.fingerprint())
        .deadLetters(deadLetters)
        .config(settings.config())
        .orderedBy(MessageKeys::group)
        .messageId(Message::messageId)
        .build();
  }

  public Settings settings() {
    return settings;
  }

  /** Receives and processes until stopped. Runs once. */
  public void run() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("the consumer already ran or was closed");
    }
    synchronized (receiveLock) {
      loopThread = Thread.currentThread();
    }
    ScheduledExecutorService owned = null;
    Scheduler scheduler = settings.scheduler();
    if (scheduler == null) {
      owned = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "once-sqs-visibility");
        t.setDaemon(true);
        return t;
      });
      scheduler = Scheduler.of(owned);
    }
    try {
      Duration receiveBackoff = FIRST_RECEIVE_BACKOFF;
      while (!stopRequested.get()) {
        VisibilityExtender extender = new VisibilityExtender(settings.sqs(), settings.queueUrl(),
            seconds(settings.visibilityTimeout()));
        List<Message> batch;
        try {
          batch = gather(extender, scheduler);
          receiveBackoff = FIRST_RECEIVE_BACKOFF;
        } catch (ReceiveFailed e) {
          extender.stop();
          if (!stopRequested.get()) {
            LOG.log(System.Logger.Level.WARNING, "receiving from " + settings.queueUrl()
                + " failed; trying again in " + receiveBackoff, e.getCause());
            pause(receiveBackoff);
            receiveBackoff = min(receiveBackoff.multipliedBy(2), MAX_RECEIVE_BACKOFF);
          }
          continue;
        }
        if (batch.isEmpty()) {
          extender.stop();
          continue;
        }
        process(batch, extender);
      }
    } finally {
      if (owned != null) {
        owned.shutdownNow();
      }
      finished.countDown();
    }
  }

  private void process(List<Message> batch, VisibilityExtender extender) {
    BatchOutcome<Message> outcome;
    try {
      outcome = executor.process(batch, settings.scope(), stopRequested::get);
    } catch (Error fatal) {
      // The process is going down: nothing is deleted or released, as a killed process could not
      // either. The visibility lapses and the messages come again (handled ones replay).
      extender.stop();
      throw fatal;
    } catch (RuntimeException e) {
      extender.stop();
      LOG.log(System.Logger.Level.ERROR, "processing a batch of " + batch.size() + " messages"
          + " failed; they come again after their visibility timeout", e);
      return;
    }
    // No extension after this point may undo the visibility given to the retries below.
    extender.stop();
    settle(outcome);
  }

  /** Deletes the final messages; gives the others the visibility timeout of their retry. */
  private void settle(BatchOutcome<Message> outcome) {
    List<Message> done = new ArrayList<>();
    List<SqsCalls.Visibility> later = new ArrayList<>();
    Instant now = once.clock().instant();
    for (ItemResult<Message> item : outcome.items()) {
      if (item.isFinal()) {
        done.add(item.message());
      } else {
        later.add(new SqsCalls.Visibility(item.message(), retrySeconds(item.retryAt(), now)));
      }
    }
    SqsCalls.delete(settings.sqs(), settings.queueUrl(), done);
    SqsCalls.changeVisibility(settings.sqs(), settings.queueUrl(), later, "retry delay");
  }

  /** Receives up to the batch size: one long poll, then short polls while messages come. */
  private List<Message> gather(VisibilityExtender extender, Scheduler scheduler)
      throws ReceiveFailed {
    List<Message> batch = new ArrayList<>();
    int waitSeconds = seconds(settings.waitTime());
    Duration period = settings.visibilityTimeout().dividedBy(3);
    while (batch.size() < settings.batchSize() && !stopRequested.get()) {
      int wanted = Math.min(MAX_RECEIVE, settings.batchSize() - batch.size());
      List<Message> received;
      try {
        received = receive(wanted, batch.isEmpty() ? waitSeconds : 0);
      } catch (ReceiveFailed e) {
        if (batch.isEmpty()) {
          throw e;
        }
        break; // process what was received; the next receive reports the failure
      }
      if (received.isEmpty()) {
        break;
      }
      // Extended from its receive on: a batch gathered from several receives waits its turn.
      extender.add(received, scheduler, period);
      batch.addAll(received);
    }
    return batch;
  }

  private List<Message> receive(int max, int waitSeconds) throws ReceiveFailed {
    ReceiveMessageRequest request = ReceiveMessageRequest.builder()
        .queueUrl(settings.queueUrl())
        .maxNumberOfMessages(max)
        .waitTimeSeconds(waitSeconds)
        .visibilityTimeout(seconds(settings.visibilityTimeout()))
        .messageSystemAttributeNames(MessageSystemAttributeName.ALL)
        .messageAttributeNames("All")
        .build();
    synchronized (receiveLock) {
      if (stopRequested.get()) {
        return List.of();
      }
      receiving = true;
    }
    try {
      ReceiveMessageResponse response = settings.sqs().receiveMessage(request);
      return response.messages();
    } catch (SdkException | IllegalStateException e) {
      // IllegalStateException: the client was closed under us.
      if (e instanceof AbortedException && !stopRequested.get()) {
        interruptedElsewhere();
      }
      if (stopRequested.get()) {
        return List.of(); // interrupted by stop(): messages of this receive, if any, come again
      }
      throw new ReceiveFailed(e);
    } finally {
      synchronized (receiveLock) {
        receiving = false;
        // An interrupt meant for the receive must not reach a handler; one that stop() did not
        // send (an executor shutting down) ends the loop as stop() would.
        if (Thread.interrupted() && !stopRequested.get()) {
          interruptedElsewhere();
        }
      }
    }
  }

  private void interruptedElsewhere() {
    LOG.log(System.Logger.Level.INFO, "the consumer of {0} was interrupted; it stops",
        settings.queueUrl());
    stopRequested.set(true);
    stopSignal.countDown();
  }

  /** Asks the loop to end after the message being handled; returns at once. Idempotent. */
  public void stop() {
    stopRequested.set(true);
    stopSignal.countDown();
    synchronized (receiveLock) {
      // Only ever inside a receive, never a handler: the SDK gives up at its own checkpoints (a
      // retry's backoff, before sending); a socket read in progress runs to the poll's end.
      if (receiving && loopThread != null) {
        loopThread.interrupt();
      }
    }
  }

  public boolean isStopRequested() {
    return stopRequested.get();
  }

  /** Stops the loop and waits up to {@code wait} for it to end. */
  public boolean close(Duration wait) {
    stop();
    if (started.compareAndSet(false, true)) {
      finished.countDown();
      return true;
    }
    try {
      return finished.await(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private void pause(Duration pause) {
    try {
      stopSignal.await(pause.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stop();
    }
  }

  /**
   * The visibility timeout that delivers a message again at {@code retryAt}: whole seconds,
   * rounded up (never earlier than asked, never a hot loop), at most 12 hours.
   */
  public static int retrySeconds(Instant retryAt, Instant now) {
    long millis = Duration.between(now, retryAt).toMillis();
    if (millis <= 0) {
      return 0;
    }
    long seconds = (millis + 999) / 1000;
    return (int) Math.min(seconds, MAX_VISIBILITY_SECONDS);
  }

  /** A duration in whole seconds, rounded up. */
  static int seconds(Duration d) {
    long seconds = d.getSeconds() + (d.getNano() > 0 ? 1 : 0);
    return (int) Math.min(seconds, Integer.MAX_VALUE);
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /** A receive that failed (network, throttling, a closed client). */
  private static final class ReceiveFailed extends Exception {
    private static final long serialVersionUID = 1L;

    ReceiveFailed(Exception cause) {
      super(cause);
    }
  }
}
