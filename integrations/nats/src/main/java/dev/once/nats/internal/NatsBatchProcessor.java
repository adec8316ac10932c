package dev.once.nats.internal;

import dev.once.Once;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.ItemResult;
import io.nats.client.ConsumerContext;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.Message;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BooleanSupplier;

/**
 * One fetched batch → one {@link BatchExecutor#process} (one {@code claimAll}) under in-progress
 * acks, then each message settled by its result: final → {@code ack} ({@code term} when
 * dead-lettered), not final → {@code nakWithDelay} until its retry time. Not API.
 */
public final class NatsBatchProcessor implements AutoCloseable {

  private static final System.Logger LOG = System.getLogger(NatsBatchProcessor.class.getName());
  /** The shortest in-progress period: JetStream's AckWait is at least a second in practice. */
  private static final Duration MIN_BEAT = Duration.ofMillis(10);

  private final Once once;
  private final Settings settings;
  private final BatchExecutor<Message> executor;
  private final Object lock = new Object();
  private JetStream jetStream;
  private ConsumerContext context;
  private ScheduledExecutorService beats;
  private boolean closed;

  public NatsBatchProcessor(Once once, Settings settings) {
    this.once = once;
    this.settings = settings;
    this.executor = BatchExecutor.<Message>builder(once, settings.handler())
        .scope(settings.scope())
        .key(m -> settings.keys().apply(m))
        .fingerprint(settings.fingerprint())
        .deadLetters(new JetStreamDeadLetters(this::jetStream, settings.deadLetterSubject(),
            settings.consumer()))
        .config(settings.config())
        // Redeliveries are told apart by stream sequence (for messages processed without a key).
        .messageId(m -> m.isJetStream()
            ? m.metaData().getStream() + ":" + m.metaData().streamSequence() : m)
        .build();
  }

  public Settings settings() {
    return settings;
  }

  /** The JetStream context of the connection, made on first use. */
  public JetStream jetStream() {
    synchronized (lock) {
      if (jetStream == null) {
        try {
          jetStream = settings.connection().jetStream();
        } catch (IOException e) {
          throw new UncheckedIOException("cannot make a JetStream context", e);
        }
      }
      return jetStream;
    }
  }

  /**
   * The durable pull consumer, looked up on first use and checked: acks must be explicit (with
   * {@code AckAll} an ack would settle earlier messages that are not final; with {@code None}
   * nothing is redelivered).
   */
  public ConsumerContext consumerContext() {
    synchronized (lock) {
      if (context == null) {
        ConsumerContext found;
        try {
          found = jetStream().getConsumerContext(settings.stream(), settings.consumer());
        } catch (IOException e) {
          throw new UncheckedIOException("cannot look up the consumer " + settings.consumer()
              + " of stream " + settings.stream(), e);
        } catch (JetStreamApiException e) {
          throw new IllegalStateException("cannot look up the consumer " + settings.consumer()
              + " of stream " + settings.stream() + ": " + e.getMessage(), e);
        }
        ConsumerConfiguration config = found.getCachedConsumerInfo().getConsumerConfiguration();
        if (config.getAckPolicy() != AckPolicy.Explicit) {
          throw new IllegalStateException("the consumer " + settings.consumer() + " has ack"
              + " policy " + config.getAckPolicy() + "; Once needs AckPolicy.Explicit (each"
              + " message acked once its outcome is stored)");
        }
        if (config.getMaxDeliver() > 0) {
          LOG.log(System.Logger.Level.WARNING, "the consumer {0} has MaxDeliver {1}: JetStream"
              + " stops delivering a message after that many deliveries, naks for messages in"
              + " progress elsewhere included, without a dead letter. Once bounds the handler's"
              + " attempts itself (maxAttempts): prefer MaxDeliver -1",
              settings.consumer(), config.getMaxDeliver());
        }
        context = found;
      }
      return context;
    }
  }

  /** The consumer's AckWait, from its configuration on the server. */
  public Duration ackWait() {
    ConsumerInfo info = consumerContext().getCachedConsumerInfo();
    return info.getConsumerConfiguration().getAckWait();
  }

  /**
   * Processes one fetched batch and settles each message by its result.
   *
   * @param stop asked before each message: true to stop, giving the rest back at once (nak)
   */
  public BatchOutcome<Message> process(List<Message> messages, BooleanSupplier stop) {
    if (messages.isEmpty()) {
      return executor.process(messages, settings.scope(), stop);
    }
    BatchOutcome<Message> outcome;
    try (InProgressBeat beat = beat(messages)) {
      outcome = executor.process(messages, settings.scope(), stop);
    } catch (RuntimeException e) {
      // Not a result of the engine's: no message is known final. Each comes again after the
      // initial backoff; those whose outcome was stored then replay.
      LOG.log(System.Logger.Level.ERROR, "processing a batch of " + messages.size()
          + " messages failed; they are redelivered", e);
      for (Message message : messages) {
        tryTo(() -> message.nakWithDelay(settings.config().initialBackoff()));
      }
      throw e;
    }
    // An Error (the process going down) leaves the messages unsettled: JetStream redelivers
    // them after their AckWait, as for a process that died.
    settle(outcome);
    return outcome;
  }

  private InProgressBeat beat(List<Message> messages) {
    if (!settings.inProgressAcks()) {
      return InProgressBeat.none();
    }
    Duration period = ackWait().dividedBy(3);
    if (period.compareTo(MIN_BEAT) < 0) {
      period = MIN_BEAT;
    }
    return InProgressBeat.start(scheduler(), List.copyOf(messages), period);
  }

  private ScheduledExecutorService scheduler() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("the consumer is closed");
      }
      if (beats == null) {
        beats = Executors.newSingleThreadScheduledExecutor(task -> {
          Thread thread = new Thread(task, "once-nats-in-progress-" + settings.consumer());
          thread.setDaemon(true);
          return thread;
        });
      }
      return beats;
    }
  }

  /**
   * Acks the final messages ({@code term} for those dead-lettered: published, their failure
   * stored) and naks the others with a delay until their retry time. A failure here is logged,
   * never a failure of the work: an unacked message comes again after its AckWait and replays.
   */
  private void settle(BatchOutcome<Message> outcome) {
    Instant now = once.clock().instant();
    int failed = 0;
    RuntimeException first = null;
    for (ItemResult<Message> item : outcome.items()) {
      Message message = item.message();
      RuntimeException failure;
      if (item.status() == ItemResult.Status.DEAD_LETTERED) {
        failure = tryTo(message::term);
      } else if (item.isFinal()) {
        failure = tryTo(message::ack);
      } else {
        Duration delay = Duration.between(now, item.retryAt());
        failure = delay.isNegative() || delay.isZero()
            ? tryTo(message::nak) // due now (the consumer is stopping): another takes it
            : tryTo(() -> message.nakWithDelay(delay));
      }
      if (failure != null) {
        failed++;
        first = first == null ? failure : first;
      }
    }
    if (failed > 0) {
      LOG.log(System.Logger.Level.WARNING, "could not settle " + failed + " of "
          + outcome.items().size() + " messages; they are redelivered after their AckWait, and"
          + " those whose outcome is stored replay", first);
    }
  }

  /** Runs one ack, nak or term; what it threw, or null. */
  private static RuntimeException tryTo(Runnable ack) {
    try {
      ack.run();
      return null;
    } catch (RuntimeException e) {
      return e;
    }
  }

  /** Stops the in-progress scheduler. */
  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      if (beats != null) {
        beats.shutdownNow();
      }
    }
  }
}
