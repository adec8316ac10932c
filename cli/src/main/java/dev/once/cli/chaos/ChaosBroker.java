package dev.once.cli.chaos;

import dev.once.Attempt;
import dev.once.Once;
import dev.once.cli.support.CommandFailure;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A real broker of {@code once chaos --broker}: RabbitMQ, NATS JetStream, Kafka or SQS, reached
 * with the client its Once adapter takes. Both sides of a run use it:
 *
 * <ul>
 *   <li>the coordinator ({@link ChaosBrokerRun}) {@linkplain #connect connects}, declares the
 *       run's destination and its dead-letter destination ({@link #create}, unique names per run),
 *       {@linkplain #publish publishes} the events, asks how many messages wait or are not yet
 *       settled, reads the {@linkplain #deadLetters dead letters} for the audit and
 *       {@linkplain #delete deletes} what it declared;
 *   <li>each worker process ({@link ChaosBrokerWorker}) {@linkplain #consume consumes} through the
 *       broker's Once adapter ({@code IdempotentRabbitConsumer}, {@code IdempotentNatsConsumer},
 *       {@code IdempotentConsumer} and its loop, {@code IdempotentSqsConsumer}).
 * </ul>
 *
 * An event's message carries its id as the adapter's default key (RabbitMQ's {@code message-id},
 * a header, an SQS message attribute) and a body of the id and, for a poison event, the word
 * {@code poison}. A duplicate is the same message published again, as a producer retry does.
 * Not thread-safe.
 */
abstract class ChaosBroker implements AutoCloseable {

  /** The brokers, by the name {@code --broker} takes. */
  enum Kind {
    RABBITMQ("RabbitMQ", "amqp://guest:guest@127.0.0.1:5672"),
    NATS("NATS JetStream", "nats://127.0.0.1:4222"),
    KAFKA("Kafka", "127.0.0.1:9092"),
    SQS("SQS", "http://127.0.0.1:9324");

    final String title;
    final String defaultUri;

    Kind(String title, String defaultUri) {
      this.title = title;
      this.defaultUri = defaultUri;
    }

    String option() {
      return name().toLowerCase(Locale.ROOT);
    }

    static Kind parse(String text) {
      for (Kind k : values()) {
        if (k.option().equalsIgnoreCase(text.trim())) {
          return k;
        }
      }
      throw new IllegalArgumentException("--broker must be rabbitmq, nats, kafka or sqs, was "
          + text);
    }
  }

  /**
   * Where and how a run consumes.
   *
   * @param uri        as the client takes it (an AMQP URI, a NATS URL, Kafka bootstrap servers,
   *                   an SQS endpoint URL); may hold a password
   * @param region     the SQS region; unused by the others
   * @param name       the run's destination (queue, stream, topic), unique per run
   * @param scope      the scope of the idempotency keys
   * @param batch      the prefetch, fetch or poll size: one {@code claimAll} per batch
   * @param ackWait    NATS's AckWait and SQS's visibility timeout
   * @param partitions Kafka's partitions
   */
  record Target(Kind kind, String uri, String region, String name, String scope, int batch,
      Duration ackWait, int partitions) {}

  /** One event of a run: its id, the key of its messages, and whether its handler fails. */
  record Event(String id, boolean poison) {

    static final String POISON = "poison";

    byte[] body() {
      return (poison ? id + " " + POISON : id).getBytes(StandardCharsets.UTF_8);
    }

    static Event parse(byte[] body) {
      String text = new String(body, StandardCharsets.UTF_8).trim();
      int space = text.indexOf(' ');
      return space < 0 ? new Event(text, false)
          : new Event(text.substring(0, space), text.substring(space + 1).equals(POISON));
    }
  }

  /** The business logic of a worker, given an event's message body. */
  @FunctionalInterface
  interface Handler {
    void handle(byte[] body, Attempt attempt) throws Exception;
  }

  /** A running adapter in a worker process. */
  interface Consumer {
    /** False once it stopped on its own (its connection closed for good, a failure). */
    boolean running();

    /** Why it stopped on its own, if known. */
    String failure();

    /** Stops it gracefully (the batch in hand settled as its adapter does) and disconnects. */
    void close();
  }

  final Target target;

  ChaosBroker(Target target) {
    this.target = target;
  }

  static ChaosBroker of(Target target) {
    return switch (target.kind()) {
      case RABBITMQ -> new ChaosRabbitBroker(target);
      case NATS -> new ChaosNatsBroker(target);
      case KAFKA -> new ChaosKafkaBroker(target);
      case SQS -> new ChaosSqsBroker(target);
    };
  }

  /**
   * Connects (the coordinator's connection).
   *
   * @throws CommandFailure with exit code 2 if the broker cannot be reached
   */
  abstract void connect();

  /** What the header prints: the broker, where, and the destinations of the run. */
  abstract String describe();

  /** How a duplicate travels, for the header. */
  abstract String keyDescription();

  /** Declares the run's destination, its dead-letter destination and what they need. */
  abstract void create() throws Exception;

  /** Publishes {@code events}, in order, and returns once the broker has them all. */
  abstract void publish(List<Event> events) throws Exception;

  /** Messages waiting to be delivered (not handed to a consumer yet). */
  abstract long waiting() throws Exception;

  /**
   * Messages not settled: waiting, plus delivered and not acknowledged when the broker tells
   * (RabbitMQ does not over AMQP: there, only the waiting ones, exact once no consumer holds any).
   */
  abstract long unsettled() throws Exception;

  /** Whether {@link #unsettled()} counts delivered messages not acknowledged yet. */
  abstract boolean countsUnacknowledged();

  /** The bodies of every dead letter of the run, read without taking them away. */
  abstract List<byte[]> deadLetters() throws Exception;

  /** Deletes what {@link #create()} declared. */
  abstract void delete() throws Exception;

  /**
   * Starts a consumer through the broker's adapter, on connections of its own.
   *
   * @param member a stable identity of the worker's slot, which its replacement takes over
   */
  abstract Consumer consume(Once once, Handler handler, String member) throws Exception;

  /** Closes the coordinator's connection. */
  @Override
  public abstract void close();

  /** Counts the dead letters of {@link #deadLetters()} by event id. */
  final Map<String, Integer> deadLettersByEvent() throws Exception {
    Map<String, Integer> counts = new java.util.HashMap<>();
    for (byte[] body : deadLetters()) {
      counts.merge(Event.parse(body).id(), 1, Integer::sum);
    }
    return counts;
  }

  /** {@code uri} without the password of its user part, for printing. */
  static String display(String uri) {
    try {
      URI u = URI.create(uri);
      String user = u.getRawUserInfo();
      if (user == null || !user.contains(":")) {
        return uri;
      }
      return uri.replace(user + "@", user.substring(0, user.indexOf(':')) + ":***@");
    } catch (IllegalArgumentException e) {
      return uri;
    }
  }

  /** The message of {@code e} and of its causes, for a one-line error. */
  static String causes(Throwable e) {
    StringBuilder s = new StringBuilder();
    for (Throwable t = e; t != null && s.length() < 400; t = t.getCause()) {
      String m = t.getMessage();
      String part = m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
      if (s.indexOf(part) < 0) {
        s.append(s.length() == 0 ? "" : ": ").append(part);
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return s.toString();
  }

  static CommandFailure unreachable(Target target, Throwable e) {
    return new CommandFailure(CommandFailure.CANNOT_RUN, "cannot reach the broker "
        + target.kind().title + " at " + display(target.uri()) + ": " + causes(e));
  }
}
