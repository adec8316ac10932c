package dev.once.cli.chaos;

import dev.once.Once;
import dev.once.cli.support.CommandFailure;
import dev.once.nats.IdempotentNatsConsumer;
import dev.once.nats.KeyDerivation;
import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.api.StreamState;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * NATS JetStream for {@code once chaos --broker nats}: a file stream named after the run on the
 * subject {@code <name>.events}, a durable pull consumer {@value #CONSUMER} (explicit acks,
 * AckWait of the run, MaxDeliver -1) shared by the workers, and a stream of its own for the dead
 * letters ({@code dlq.<name>.>}). Events carry their id in the header {@value #KEY_HEADER}, the
 * adapter's key; no {@code Nats-Msg-Id}, so the stream keeps a duplicate (as it does one published
 * outside its duplicate window) and the consumer sees it. Workers consume through
 * {@link IdempotentNatsConsumer}.
 */
final class ChaosNatsBroker extends ChaosBroker {

  static final String CONSUMER = "workers";
  static final String KEY_HEADER = "Once-Event-Id";

  private Connection connection;
  private JetStreamManagement jsm;
  private JetStream js;

  ChaosNatsBroker(Target target) {
    super(target);
  }

  private String stream() {
    return target.name();
  }

  private String subject() {
    return target.name() + ".events";
  }

  private String deadLetterStream() {
    return target.name() + "-dlq";
  }

  private Options options(boolean reconnect) {
    return Options.builder().server(target.uri()).connectionTimeout(Duration.ofSeconds(5))
        .connectionName(reconnect ? "once-chaos-worker" : "once-chaos")
        .maxReconnects(reconnect ? -1 : 0).reconnectWait(Duration.ofMillis(250))
        // Its default listener logs every refused connection at SEVERE: the run says it once.
        .errorListener(new ErrorListener() {})
        .build();
  }

  @Override
  void connect() {
    try {
      connection = Nats.connect(options(false));
      jsm = connection.jetStreamManagement();
      js = connection.jetStream();
      jsm.getAccountStatistics(); // fails without JetStream
    } catch (IllegalArgumentException e) {
      throw new CommandFailure(CommandFailure.CANNOT_RUN, "--broker-uri " + display(target.uri())
          + " is not a NATS URL (nats://host:4222): " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unreachable(target, e);
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      throw unreachable(target, e);
    }
  }

  @Override
  String describe() {
    return "NATS " + connection.getServerInfo().getVersion() + " with JetStream at "
        + display(target.uri()) + ", stream " + stream() + " (file) on " + subject()
        + ", durable pull consumer " + CONSUMER + " (AckWait "
        + ChaosTime.format(target.ackWait()) + "), dead letters to stream " + deadLetterStream();
  }

  @Override
  String keyDescription() {
    return "same " + KEY_HEADER + " header, no Nats-Msg-Id: the stream keeps both";
  }

  @Override
  void create() throws IOException, JetStreamApiException {
    jsm.addStream(StreamConfiguration.builder().name(stream()).subjects(target.name() + ".>")
        .storageType(StorageType.File).build());
    jsm.addStream(StreamConfiguration.builder().name(deadLetterStream())
        .subjects(IdempotentNatsConsumer.Builder.DEFAULT_DEAD_LETTER_PREFIX + target.name()
            + ".>")
        .storageType(StorageType.File).build());
    jsm.addOrUpdateConsumer(stream(), ConsumerConfiguration.builder().durable(CONSUMER)
        .ackPolicy(AckPolicy.Explicit).ackWait(target.ackWait()).maxDeliver(-1)
        .maxAckPending(-1).build());
  }

  @Override
  void publish(List<Event> events) throws Exception {
    List<CompletableFuture<PublishAck>> acks = new ArrayList<>();
    for (Event e : events) {
      Headers headers = new Headers();
      headers.add(KEY_HEADER, e.id());
      acks.add(js.publishAsync(NatsMessage.builder().subject(subject()).headers(headers)
          .data(e.body()).build()));
    }
    for (CompletableFuture<PublishAck> ack : acks) {
      ack.get(30, TimeUnit.SECONDS);
    }
  }

  private ConsumerInfo info() throws IOException, JetStreamApiException {
    return jsm.getConsumerInfo(stream(), CONSUMER);
  }

  @Override
  long waiting() throws IOException, JetStreamApiException {
    return info().getNumPending();
  }

  @Override
  long unsettled() throws IOException, JetStreamApiException {
    ConsumerInfo info = info();
    return info.getNumPending() + info.getNumAckPending();
  }

  @Override
  boolean countsUnacknowledged() {
    return true;
  }

  @Override
  List<byte[]> deadLetters() throws IOException, JetStreamApiException {
    StreamState state = jsm.getStreamInfo(deadLetterStream()).getStreamState();
    List<byte[]> bodies = new ArrayList<>();
    if (state.getMsgCount() == 0) {
      return bodies;
    }
    for (long seq = state.getFirstSequence(); seq <= state.getLastSequence(); seq++) {
      bodies.add(jsm.getMessage(deadLetterStream(), seq).getData());
    }
    return bodies;
  }

  @Override
  void delete() throws IOException, JetStreamApiException {
    jsm.deleteStream(stream());
    jsm.deleteStream(deadLetterStream());
  }

  @Override
  Consumer consume(Once once, Handler handler, String member) throws Exception {
    Connection own = Nats.connect(options(true));
    IdempotentNatsConsumer consumer = IdempotentNatsConsumer
        .builder(once, (message, attempt) -> handler.handle(message.getData(), attempt))
        .connection(own)
        .stream(stream())
        .consumer(CONSUMER)
        .scope(target.scope())
        .key(KeyDerivation.header(KEY_HEADER))
        .batchSize(target.batch())
        .build();
    return ChaosLoopConsumer.start("once-chaos-nats", consumer::run, "the consumer loop ended", () -> {
      consumer.close();
      try {
        own.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
  }

  @Override
  public void close() {
    if (connection != null) {
      try {
        connection.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
