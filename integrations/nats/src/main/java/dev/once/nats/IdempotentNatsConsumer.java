package dev.once.nats;

import dev.once.Fingerprint;
import dev.once.IdempotencyKey;
import dev.once.InvalidKeyException;
import dev.once.Once;
import dev.once.batch.BatchConfig;
import dev.once.batch.BatchExecutor;
import dev.once.batch.BatchOutcome;
import dev.once.batch.MessageHandler;
import dev.once.nats.internal.NatsBatchProcessor;
import dev.once.nats.internal.Settings;
import dev.once.support.Checks;
import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.FetchConsumeOptions;
import io.nats.client.FetchConsumer;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamStatusCheckedException;
import io.nats.client.Message;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * An idempotent consumer of a durable JetStream pull consumer: a handler runs at most once per
 * idempotency key (in effect) over JetStream's at-least-once delivery. Each fetch (up to
 * {@link Builder#batchSize} messages) is one {@link BatchExecutor#process}, so one
 * {@code claimAll} to the store; then each message is settled by what became of it:
 * <ul>
 *   <li>handled, a duplicate (replayed) → {@code ack}, only once its outcome is stored;
 *   <li>given up on (a terminal failure, retries used up, key reused, no key) → published to the
 *       dead-letter subject with a JetStream publish (durable once acknowledged), its failure
 *       stored, then {@code term};
 *   <li>anything else (a retryable failure, in progress on another consumer, …) →
 *       {@code nakWithDelay} until its retry time: never a hot loop.
 * </ul>
 * While a batch runs, every message of it gets an in-progress ack ({@code +WPI}) every third of
 * the consumer's AckWait, so JetStream does not hand it to another consumer meanwhile. An ack that
 * fails is logged, never a failure of the work: the message comes again and replays.
 *
 * <pre>{@code
 * IdempotentNatsConsumer shipping = IdempotentNatsConsumer
 *     .builder(once, (Message message, Attempt attempt) -> ship(message.getData(), attempt.key()))
 *     .connection(connection)
 *     .stream("ORDERS")
 *     .consumer("shipping")            // a durable pull consumer, AckPolicy.Explicit
 *     .build();
 * executor.submit(shipping);           // fetch, process, settle, until closed
 * ...
 * shipping.close();
 * }</pre>
 *
 * <p>Run it on a thread of its own ({@link #run()}), or call {@link #process} with messages
 * fetched by a loop of your own. Thread-safe.
 */
public final class IdempotentNatsConsumer implements Runnable, AutoCloseable {

  private static final System.Logger LOG =
      System.getLogger(IdempotentNatsConsumer.class.getName());
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(60);
  private static final Duration FLUSH_WAIT = Duration.ofSeconds(5);

  private final Once once;
  private final NatsBatchProcessor processor;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean stopRequested = new AtomicBoolean();
  /** Counted down by {@link #close()}: wakes a loop pausing after a failed fetch. */
  private final CountDownLatch stopSignal = new CountDownLatch(1);
  private final CountDownLatch finished = new CountDownLatch(1);

  private IdempotentNatsConsumer(Once once, Settings settings) {
    this.once = once;
    this.processor = new NatsBatchProcessor(once, settings);
  }

  /** A builder over {@code once} (its store, lease, retention, clock, failure policy, listener). */
  public static Builder builder(Once once, MessageHandler<Message> handler) {
    return new Builder(once, handler);
  }

  /**
   * Fetches and processes batches until {@link #close()}d or the connection is closed. Runs once.
   * A fetch that fails (the server unreachable for a while) is tried again after the fetch
   * timeout. An {@link Error} from a handler is taken as the death of the process: it ends the
   * loop at once, nothing of its batch settled (JetStream redelivers it after the AckWait).
   *
   * @throws IllegalStateException if it already ran or was closed, or the consumer is not a
   *     durable pull consumer with explicit acks
   */
  @Override
  public void run() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("the consumer already ran or was closed");
    }
    Settings settings = processor.settings();
    Connection connection = settings.connection();
    try {
      ConsumerContext context = processor.consumerContext();
      FetchConsumeOptions options = FetchConsumeOptions.builder()
          .maxMessages(settings.batchSize())
          // At least one message, then as many as are there now: a batch is not held back
          // waiting to fill up.
          .noWaitExpiresIn(settings.fetchTimeout().toMillis())
          .build();
      while (!stopRequested.get()) {
        if (connection.getStatus() == Connection.Status.CLOSED) {
          LOG.log(System.Logger.Level.INFO, "the NATS connection is closed; the consumer {0}"
              + " stops", settings.consumer());
          return;
        }
        List<Message> batch;
        try {
          batch = fetch(context, options);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (IOException | JetStreamApiException | JetStreamStatusCheckedException
            | RuntimeException e) {
          if (connection.getStatus() != Connection.Status.CLOSED) {
            LOG.log(System.Logger.Level.WARNING, "fetching from the consumer "
                + settings.consumer() + " failed; trying again", e);
            pause(settings.fetchTimeout());
          }
          continue;
        }
        if (batch.isEmpty()) {
          continue;
        }
        try {
          processor.process(batch, stopRequested::get);
        } catch (RuntimeException e) {
          pause(settings.config().initialBackoff()); // logged, and the batch nak'd, by the processor
        }
      }
    } finally {
      try {
        // The acks of the last batch leave before the caller closes the connection.
        if (connection.getStatus() == Connection.Status.CONNECTED) {
          connection.flush(FLUSH_WAIT);
        }
      } catch (TimeoutException | RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "flushing the last acks failed", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      finished.countDown();
    }
  }

  private static List<Message> fetch(ConsumerContext context, FetchConsumeOptions options)
      throws IOException, JetStreamApiException, JetStreamStatusCheckedException,
      InterruptedException {
    FetchConsumer fetch = context.fetch(options);
    try {
      List<Message> batch = new ArrayList<>();
      for (Message m = fetch.nextMessage(); m != null; m = fetch.nextMessage()) {
        batch.add(m);
      }
      return batch;
    } finally {
      try {
        fetch.close();
      } catch (Exception e) {
        LOG.log(System.Logger.Level.DEBUG, "closing a finished fetch failed", e);
      }
    }
  }

  private void pause(Duration duration) {
    try {
      stopSignal.await(duration.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopRequested.set(true);
    }
  }

  /**
   * Processes messages fetched from this builder's consumer by a loop of your own: one
   * {@code claimAll}, in-progress acks while the handlers run, then each message acked, nak'd
   * with a delay, or terminated after its dead letter, as {@link #run()} does.
   *
   * @return what became of each message (already settled)
   */
  public BatchOutcome<Message> process(List<Message> messages) {
    Objects.requireNonNull(messages, "messages");
    return processor.process(messages, stopRequested::get);
  }

  /**
   * Stops the loop and waits up to 60 seconds for it to end: the message being handled finishes,
   * the rest of its batch is nak'd at once (another consumer takes it), the final messages are
   * acked. Does not close the connection, which stays the caller's.
   */
  @Override
  public void close() {
    stopRequested.set(true);
    stopSignal.countDown();
    try {
      if (started.compareAndSet(false, true)) {
        finished.countDown();
      } else if (!finished.await(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.log(System.Logger.Level.WARNING, "the consumer loop did not end within {0}",
            CLOSE_WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      processor.close();
    }
  }

  /** The {@link Once} this consumer claims through. */
  public Once once() {
    return once;
  }

  /** The scope of the idempotency keys. */
  public String scope() {
    return processor.settings().scope();
  }

  /**
   * Builds an {@link IdempotentNatsConsumer}. Required: {@link #connection}, {@link #stream},
   * {@link #consumer}. Defaults: scope {@code <stream>.<consumer>}; key from the
   * {@value KeyDerivation#DEFAULT_HEADER} header; fingerprint = SHA-256 of the payload; messages
   * dead letters to {@code dlq.<original subject>}; {@link BatchConfig#defaults()} (a retry's
   * backoff and an in-progress message's wait are the nak delay); batches of up to 100 messages;
   * fetches waiting up to 1 s.
   */
  public static final class Builder {
    /** Default number of messages per fetch (and per {@code claimAll}). */
    public static final int DEFAULT_BATCH_SIZE = 100;
    /** Default longest wait of a fetch for its first message (the shortest jnats allows). */
    public static final Duration DEFAULT_FETCH_TIMEOUT = Duration.ofSeconds(1);
    /** Prefix of the default dead-letter subject: {@code orders.created} → {@code dlq.orders.created}. */
    public static final String DEFAULT_DEAD_LETTER_PREFIX = "dlq.";

    private final Once once;
    private final MessageHandler<Message> handler;
    private Connection connection;
    private String stream;
    private String consumer;
    private String scope;
    private KeyDerivation keys = KeyDerivation.header(KeyDerivation.DEFAULT_HEADER);
    private Function<Message, Fingerprint> fingerprint = m -> Fingerprint.of(
        m.getData() == null ? new byte[0] : m.getData());
    private Function<Message, String> deadLetterSubject =
        m -> DEFAULT_DEAD_LETTER_PREFIX + m.getSubject();
    private BatchConfig config = BatchConfig.defaults();
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Duration fetchTimeout = DEFAULT_FETCH_TIMEOUT;
    private boolean inProgressAcks = true;

    private Builder(Once once, MessageHandler<Message> handler) {
      this.once = Objects.requireNonNull(once, "once");
      this.handler = Objects.requireNonNull(handler, "handler");
    }

    /** The connection to fetch, ack and publish dead letters on; the caller's to close. Required. */
    public Builder connection(Connection connection) {
      this.connection = Objects.requireNonNull(connection, "connection");
      return this;
    }

    /** The stream the consumer reads. Required. */
    public Builder stream(String stream) {
      this.stream = requireName(stream, "stream");
      return this;
    }

    /**
     * The durable pull consumer to fetch from, created beforehand with
     * {@code AckPolicy.Explicit} (and best {@code MaxDeliver} -1). Required.
     */
    public Builder consumer(String consumer) {
      this.consumer = requireName(consumer, "consumer");
      return this;
    }

    /** The scope of the idempotency keys, instead of {@code <stream>.<consumer>}. */
    public Builder scope(String scope) {
      Objects.requireNonNull(scope, "scope");
      IdempotencyKey.of(scope, "probe"); // validates now, with the key's own message
      this.scope = scope;
      return this;
    }

    /** How the idempotency key is derived; e.g. {@code header("Idempotency-Key")}. */
    public Builder key(KeyDerivation keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /**
     * The fingerprint of a message: a redelivery must produce the same one; the same key with
     * another fingerprint is dead-lettered as {@code KEY_REUSED}.
     */
    public Builder fingerprint(Function<Message, Fingerprint> fingerprint) {
      this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
      return this;
    }

    /**
     * The subject each given-up message is published to. It must be captured by a stream (the
     * publish waits for that stream's acknowledgement; without one it fails and the message is
     * retried), and not by the consumed stream itself.
     */
    public Builder deadLetterSubject(Function<Message, String> subject) {
      this.deadLetterSubject = Objects.requireNonNull(subject, "subject");
      return this;
    }

    /**
     * How messages are retried, given up on and claimed (attempts, backoffs, messages without a
     * key, batch claims); a retry's backoff, and the wait before looking again at a message in
     * progress elsewhere, are the nak delay. Default: {@link BatchConfig#defaults()}.
     */
    public Builder config(BatchConfig config) {
      this.config = Objects.requireNonNull(config, "config");
      return this;
    }

    /** The most messages per fetch: one {@code claimAll} and one batch of handlers. */
    public Builder batchSize(int messages) {
      this.batchSize = Checks.positive(messages, "batchSize");
      return this;
    }

    /** How long a fetch waits for a first message; at least one second. */
    public Builder fetchTimeout(Duration timeout) {
      Checks.positive(timeout, "fetchTimeout");
      if (timeout.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("fetchTimeout " + timeout + " is below one second,"
            + " the shortest pull expiry jnats allows");
      }
      this.fetchTimeout = timeout;
      return this;
    }

    /**
     * No in-progress acks: a deliberately broken consumer, for the tests that show what they
     * prevent (a slow batch's messages redelivered to another consumer after the AckWait).
     */
    Builder withoutInProgressAcks() {
      this.inProgressAcks = false;
      return this;
    }

    /**
     * The consumer. It looks the JetStream consumer up when it first runs or processes.
     *
     * @throws IllegalStateException if the connection, stream or consumer is missing
     * @throws InvalidKeyException   if no scope is set and {@code <stream>.<consumer>} is not a
     *                               valid scope
     */
    public IdempotentNatsConsumer build() {
      if (connection == null || stream == null || consumer == null) {
        throw new IllegalStateException("connection, stream and consumer are required:"
            + " .connection(nc).stream(\"ORDERS\").consumer(\"shipping\")");
      }
      String keyScope = scope;
      if (keyScope == null) {
        keyScope = stream + "." + consumer;
        try {
          IdempotencyKey.of(keyScope, "probe");
        } catch (InvalidKeyException e) {
          throw new InvalidKeyException("'" + keyScope + "' cannot be the scope of idempotency"
              + " keys (" + e.getMessage() + "): set a scope on the builder");
        }
      }
      return new IdempotentNatsConsumer(once, new Settings(handler, connection, stream, consumer,
          keyScope, keys::keyOf, fingerprint, deadLetterSubject, config, batchSize, fetchTimeout,
          inProgressAcks));
    }

    private static String requireName(String name, String what) {
      Objects.requireNonNull(name, what);
      if (name.isBlank()) {
        throw new IllegalArgumentException(what + " must not be blank");
      }
      return name;
    }
  }
}
