package dev.once.nats;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * The real {@code nats-server -js} of this machine (or {@code ONCE_NATS_URL}): each test makes
 * streams and a consumer of its own, named uniquely, and deletes them after.
 */
final class Broker {

  static final String URL = System.getenv().getOrDefault("ONCE_NATS_URL",
      "nats://127.0.0.1:4222");
  /** For setting up, publishing and inspecting; never handed to a consumer under test. */
  static final Connection ADMIN = connect();
  static final JetStreamManagement JSM;

  static {
    try {
      JSM = ADMIN.jetStreamManagement();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private Broker() {}

  /** A new connection of its own (a consumer's: closing it is a fault the test injects). */
  static Connection connect() {
    try {
      return Nats.connect(Options.builder().server(URL).connectionTimeout(Duration.ofSeconds(5))
          .maxReconnects(0).build());
    } catch (IOException e) {
      throw new UncheckedIOException("no NATS server at " + URL, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * A stream of one test: its messages on {@code subject}, read by the durable pull consumer
   * {@code consumer}; dead letters on {@code dlq.<subject>} go to a stream of their own.
   */
  record Topology(String stream, String subject, String consumer, String deadLetterStream,
      String deadLetterSubject) {}

  static Topology create(String name, Duration ackWait, Duration duplicateWindow) {
    String id = name.toUpperCase(Locale.ROOT) + "_"
        + UUID.randomUUID().toString().replace("-", "").substring(0, 10).toUpperCase(Locale.ROOT);
    String token = id.toLowerCase(Locale.ROOT);
    Topology t = new Topology(id, token + ".events", "worker", id + "_DLQ",
        IdempotentNatsConsumer.Builder.DEFAULT_DEAD_LETTER_PREFIX + token + ".events");
    try {
      JSM.addStream(StreamConfiguration.builder().name(t.stream()).subjects(token + ".>")
          .storageType(StorageType.Memory).duplicateWindow(duplicateWindow).build());
      JSM.addStream(StreamConfiguration.builder().name(t.deadLetterStream())
          .subjects(IdempotentNatsConsumer.Builder.DEFAULT_DEAD_LETTER_PREFIX + token + ".>")
          .storageType(StorageType.Memory).build());
      JSM.addOrUpdateConsumer(t.stream(), ConsumerConfiguration.builder().durable(t.consumer())
          .ackPolicy(AckPolicy.Explicit).ackWait(ackWait).maxDeliver(-1).build());
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException("cannot create the streams of " + id, e);
    }
    return t;
  }

  static void delete(Topology t) {
    for (String stream : List.of(t.stream(), t.deadLetterStream())) {
      try {
        JSM.deleteStream(stream);
      } catch (IOException | JetStreamApiException e) {
        // best effort: a leftover in-memory stream goes with the server's restart
      }
    }
  }

  static PublishAck publish(String subject, String data, String... headers) {
    Headers h = new Headers();
    for (int i = 0; i < headers.length; i += 2) {
      h.add(headers[i], headers[i + 1]);
    }
    try {
      return ADMIN.jetStream().publish(subject, h.isEmpty() ? null : h,
          data.getBytes(StandardCharsets.UTF_8));
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException("publish to " + subject + " failed", e);
    }
  }

  static ConsumerInfo info(Topology t) {
    try {
      return JSM.getConsumerInfo(t.stream(), t.consumer());
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Whether every message of the stream was delivered and settled (acked or terminated). */
  static boolean allSettled(Topology t) {
    ConsumerInfo info = info(t);
    return info.getNumPending() == 0 && info.getNumAckPending() == 0;
  }

  static long messages(String stream) {
    try {
      return JSM.getStreamInfo(stream).getStreamState().getMsgCount();
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The dead letters stored so far, in order. */
  static List<MessageInfo> deadLetters(Topology t) {
    List<MessageInfo> out = new ArrayList<>();
    long n = messages(t.deadLetterStream());
    try {
      for (long seq = 1; seq <= n; seq++) {
        out.add(JSM.getMessage(t.deadLetterStream(), seq));
      }
    } catch (IOException | JetStreamApiException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  static String text(byte[] data) {
    return new String(data, StandardCharsets.UTF_8);
  }
}
